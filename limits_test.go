package orderly_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

// A node refuses more shards than it can serve, summed over its queues,
// whatever builds its configuration.
func TestNewNodeCapsShards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noop := func(context.Context, *orderly.Batch) error { return nil }
	workers := func(shards ...int) []orderly.Worker {
		var ws []orderly.Worker
		for i, n := range shards {
			ws = append(ws, orderly.Worker{Queue: "q" + string(rune('a'+i)), Shards: n, Handler: orderly.HandlerFunc(noop)})
		}
		return ws
	}
	_, err := orderly.NewNode(e.store, &orderly.Config{Workers: workers(4096, 4096, 1)})
	require.EqualError(t, err, "orderly: 8193 shards in total is more than one node can serve (at most 8192, MaxNodeShards): use fewer shards per queue, or fewer queues")
	_, err = orderly.NewNode(e.store, &orderly.Config{Workers: workers(4096, 4096)})
	require.NoError(t, err)
}
