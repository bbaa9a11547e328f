package orderly_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
	"github.com/orderlyhq/orderly/persistence"
)

// countingStore records the scores of the jobs enqueued into one queue.
type countingStore struct {
	persistence.Store
	queue  string
	mu     sync.Mutex // guards scores
	scores []float64
}

func (s *countingStore) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	err := s.Store.Enqueue(ctx, queue, jobs)
	if err == nil && queue == s.queue {
		s.mu.Lock()
		for _, j := range jobs {
			s.scores = append(s.scores, *j.Score)
		}
		s.mu.Unlock()
	}
	return err
}

// EnqueueTick counts the ticks the store reports as enqueued by this call.
func (s *countingStore) EnqueueTick(ctx context.Context, queue, name string, tick time.Time, job persistence.NewJob) (bool, error) {
	won, err := s.Store.EnqueueTick(ctx, queue, name, tick, job)
	if won && queue == s.queue {
		s.mu.Lock()
		s.scores = append(s.scores, *job.Score)
		s.mu.Unlock()
	}
	return won, err
}

func (s *countingStore) enqueued() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.scores...)
}

// docs/contract.md §9: three nodes given the same "@every 1s" job enqueue
// each tick once: as many enqueues as distinct tick times.
func TestPeriodicTickOnceAcrossNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := &countingStore{Store: e.store, queue: "cron"}
	network := clustertest.NewNetwork()
	var seeds []string
	var nodes []*orderly.Node
	for _, name := range []string{"n1", "n2", "n3"} {
		tr, addr := network.Transport(t)
		nd, err := orderly.NewNode(cs, &orderly.Config{
			Name: name, Logger: testLogger(t), LeaseTTL: time.Second,
			Cluster:  orderly.WithTransport(&orderly.ClusterConfig{Bind: addr, Join: seeds, RejoinInterval: 300 * time.Millisecond}, tr),
			Workers:  []orderly.Worker{{Queue: "cron", Shards: 1, Handler: func(context.Context, *orderly.Batch) error { return nil }}},
			Periodic: []orderly.PeriodicJob{{Name: "heartbeat", Queue: "cron", Schedule: mustCron(t, "@every 1s"), ID: "hb", Payload: []byte(`{"ping":true}`)}},
		})
		require.NoError(t, err)
		require.NoError(t, nd.Start(e.ctx))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			nd.StopAndCancel(ctx)
		})
		seeds = append(seeds, addr)
		nodes = append(nodes, nd)
	}
	require.Eventually(t, func() bool { return len(cs.enqueued()) >= 3 }, 20*time.Second, 20*time.Millisecond)
	scores := cs.enqueued()
	distinct := map[float64]bool{}
	for _, s := range scores {
		distinct[s] = true
	}
	require.Len(t, scores, len(distinct), "a tick enqueued twice: %v", scores)

	st, err := nodes[0].Periodic(e.ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.Equal(t, "heartbeat", st[0].Name)
	require.False(t, st[0].Last.IsZero())
	require.True(t, st[0].Next.After(st[0].Last))
}

// docs/contract.md §9: ticks missed while no node ran are not replayed,
// except the latest one.
func TestPeriodicMissedTicksOnlyTheLatest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := &countingStore{Store: e.store, queue: "cron"}
	// The last tick was an hour ago: 59 or 60 ticks of "@every 1m" were
	// missed since.
	_, err := e.store.AdvanceTick(e.ctx, "minutely", time.Now().Add(-time.Hour).Truncate(time.Second))
	require.NoError(t, err)
	nd, err := orderly.NewNode(cs, &orderly.Config{
		Name: "n1", Logger: testLogger(t),
		Workers:  []orderly.Worker{{Queue: "cron", Shards: 1, Handler: func(context.Context, *orderly.Batch) error { return nil }}},
		Periodic: []orderly.PeriodicJob{{Name: "minutely", Queue: "cron", Schedule: mustCron(t, "@every 1m"), ID: "m"}},
	})
	require.NoError(t, err)
	require.NoError(t, nd.Start(e.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, nd.Stop(ctx))
	})
	require.Eventually(t, func() bool { return len(cs.enqueued()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { return len(cs.enqueued()) > 1 }, 1500*time.Millisecond, 50*time.Millisecond, "one tick, not the missed ones")
	got := persistence.FromUnixSeconds(cs.enqueued()[0])
	require.WithinDuration(t, time.Now(), got, time.Minute, "the latest missed tick")
}

func mustCron(t *testing.T, expr string) orderly.Schedule {
	t.Helper()
	s, err := orderly.ParseCron(expr)
	require.NoError(t, err)
	return s
}
