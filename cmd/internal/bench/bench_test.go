package bench

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	PullAPI = func(store persistence.Store, b *pull.Broker) (http.Handler, error) {
		return web.New(&web.Config{Store: store, Pull: b})
	}
	redistest.AtExit(nodetest.Cleanup)
	redistest.Main(m)
}

// TestScenariosRunAndAudit runs every scenario small: they complete and their
// audits hold. (A benchmark measures; this only keeps the instrument working.)
func TestScenariosRunAndAudit(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	results, err := Run(context.Background(), Config{
		Redis: srv.URL(), Jobs: 2000, Idle: 2 * time.Second, Scenarios: []string{"all"}, NodeBinary: nodetest.Binary(t),
	})
	require.NoError(t, err)
	require.Len(t, results, len(scenarios))
	for _, r := range results {
		require.True(t, r.Audit.OK, "%s: %+v", r.Scenario, r.Audit)
		switch r.Scenario {
		case "latency":
			require.Positive(t, r.LatencyP99Ms)
		case "failover":
			require.Positive(t, r.FailoverSec)
			require.Positive(t, r.Jobs)
		case "idle", "idle5":
			require.Positive(t, r.RoundTripsPerMin, r.Scenario)
			require.Positive(t, r.RedisCmdsPerMin, r.Scenario)
			require.Zero(t, r.Audit.Calls, "nothing was enqueued")
		default:
			require.Positive(t, r.ProcessPerSec, r.Scenario)
			require.Positive(t, r.RedisCmdsPerJob, r.Scenario)
			require.Equal(t, r.Jobs, r.Audit.Acked, r.Scenario)
			require.Positive(t, r.CPUPerJobMicros, r.Scenario)
		}
		if r.Scenario == "webhook" {
			require.Equal(t, r.Jobs, r.Calls, "one webhook request per job at batch 1")
		}
	}
	_, err = Run(context.Background(), Config{Redis: srv.URL(), Scenarios: []string{"nope"}})
	require.ErrorContains(t, err, `unknown scenario "nope"`)
}

// TestClusterReportsEachMaster: on a Redis Cluster a run reports the CPU of
// each master, so that the busiest one's load shows; on one server none.
func TestClusterReportsEachMaster(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	results, err := Run(context.Background(), Config{Redis: srv.URL(), Jobs: 500, Scenarios: []string{"cluster3", "lowkiq"}})
	require.NoError(t, err)
	require.Len(t, results, 2)
	require.Len(t, results[0].RedisCPUByMaster, 3)
	sum := 0.0
	for addr, cpu := range results[0].RedisCPUByMaster {
		require.Positive(t, cpu, addr)
		sum += cpu
	}
	require.InDelta(t, results[0].RedisCPUSec, sum, 0.05, "the masters' CPU adds up to the run's Redis CPU")
	require.Empty(t, results[1].RedisCPUByMaster)
}
