package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/pull"
)

func TestPullGauges(t *testing.T) {
	m := metrics.New()
	m.WatchPull(func() map[string]pull.Stats { return map[string]pull.Stats{"emails": {Waiting: 3, Held: 2}} })
	out := scrape(t, m)
	require.Contains(t, out, `orderly_pull_waiting_workers{queue="emails"} 3`)
	require.Contains(t, out, `orderly_pull_held_leases{queue="emails"} 2`)
}
