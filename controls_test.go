package orderly_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
	"github.com/orderlyhq/orderly/persistence"
)

// perQueue counts handler calls' ids per queue, across nodes.
type perQueue struct {
	mu  sync.Mutex // guards ids
	ids map[string][]string
}

func (p *perQueue) handler(queue string) orderly.HandlerFunc {
	return func(ctx context.Context, b *orderly.Batch) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ids == nil {
			p.ids = map[string][]string{}
		}
		for _, j := range b.Jobs {
			p.ids[queue] = append(p.ids[queue], j.ID)
		}
		return nil
	}
}

func (p *perQueue) count(queue string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids[queue])
}

// docs/contract.md §9: a queue paused through one node starts no handler
// call on any node while it accepts enqueues and other queues go on; it
// stays paused across node restarts, and once resumed everything queued
// is processed. The nodes poll the controls only once an hour: the other
// node learns of the pause from the store's controls notice alone.
func TestNodePauseAcrossNodesAndRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	network := clustertest.NewNetwork()
	var seeds []string
	var got perQueue
	start := func(name string) *orderly.Node {
		tr, addr := network.Transport(t)
		n, err := orderly.NewNode(e.store, &orderly.Config{
			Name: name, Logger: testLogger(t), LeaseTTL: time.Second, Concurrency: 3,
			Cluster: orderly.WithTransport(&orderly.ClusterConfig{Bind: addr, Join: seeds, RejoinInterval: 300 * time.Millisecond}, tr),
			Workers: []orderly.Worker{
				{Queue: "p", Shards: 4, Handler: got.handler("p")},
				{Queue: "other", Shards: 4, Handler: got.handler("other")},
			},
		})
		require.NoError(t, err)
		orderly.SetControlPoll(n, time.Hour)
		require.NoError(t, n.Start(e.ctx))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n.StopAndCancel(ctx)
		})
		seeds = append(seeds, addr)
		return n
	}
	stop := func(n *orderly.Node) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, n.Stop(ctx))
	}
	ready := func(ns ...*orderly.Node) {
		for _, n := range ns {
			require.Eventually(t, func() bool { return n.Ready(e.ctx) == nil }, 15*time.Second, 10*time.Millisecond)
		}
	}
	n1, n2 := start("n1"), start("n2")
	ready(n1, n2)
	require.Eventually(t, func() bool {
		st1, err1 := n1.Status(e.ctx)
		st2, err2 := n2.Status(e.ctx)
		return err1 == nil && err2 == nil && st1.Serving > 0 && st2.Serving > 0 && st1.Serving+st2.Serving == 8
	}, 15*time.Second, 10*time.Millisecond, "both nodes serve shards")

	require.ErrorIs(t, n1.PauseQueue(e.ctx, "nope"), persistence.ErrUnknownQueue)
	require.NoError(t, n1.PauseQueue(e.ctx, "p"))
	require.True(t, n1.QueuePaused("p"), "the node that paused sees it at once")
	require.Eventually(t, func() bool { return n2.QueuePaused("p") }, 10*time.Second, 10*time.Millisecond, "the notice reaches the other node")
	require.False(t, n2.QueuePaused("other"))
	require.True(t, e.stats("p").Paused)

	enqueue := func(queue, prefix string, n int) {
		jobs := make([]client.Job, n)
		for i := range jobs {
			jobs[i] = client.Job{ID: prefix + string(rune('a'+i))}
		}
		e.enqueue(queue, jobs...)
	}
	enqueue("p", "p-", 20)
	enqueue("other", "o-", 20)
	require.Eventually(t, func() bool { return got.count("other") == 20 }, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, got.count("p"), "a paused queue starts no call")
	require.EqualValues(t, 20, e.stats("p").Length, "enqueues into a paused queue are kept")

	// A resume and a pause through the other node reach the first one.
	require.NoError(t, n2.ResumeQueue(e.ctx, "p"))
	require.Eventually(t, func() bool { return !n1.QueuePaused("p") }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return got.count("p") == 20 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, n2.PauseQueue(e.ctx, "p"))
	require.Eventually(t, func() bool { return n1.QueuePaused("p") }, 10*time.Second, 10*time.Millisecond)
	enqueue("p", "p2-", 20)
	enqueue("other", "o3-", 5)
	require.Eventually(t, func() bool { return got.count("other") == 25 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 20, got.count("p"), "paused again: no call starts on either node")

	// Both nodes stop; a new one starts paused.
	stop(n1)
	stop(n2)
	n3 := start("n3")
	ready(n3)
	require.True(t, n3.QueuePaused("p"), "read from the store before serving")
	enqueue("other", "o2-", 5)
	require.Eventually(t, func() bool { return got.count("other") == 30 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 20, got.count("p"))

	require.NoError(t, n3.ResumeQueue(e.ctx, "p"))
	require.False(t, e.stats("p").Paused)
	require.Eventually(t, func() bool { return got.count("p") == 40 }, 10*time.Second, 10*time.Millisecond)
}

// docs/contract.md §9: pausing while a prefetched window runs lets the
// running call finish and starts none of the window's later calls; the
// ids not handled go back to the queue untouched.
func TestNodePauseStopsAPrefetchedWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n *orderly.Node
	entered := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var calls []string
	n = e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, Prefetch: 10,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			calls = append(calls, b.Jobs[0].ID)
			first := len(calls) == 1
			mu.Unlock()
			if first {
				close(entered)
				<-release
			}
			return nil
		},
	}}})
	jobs := make([]client.Job, 5)
	for i := range jobs {
		jobs[i] = client.Job{ID: string(rune('a' + i))}
	}
	e.enqueue("q", jobs...)
	<-entered
	require.NoError(t, n.PauseQueue(e.ctx, "q"))
	close(release)
	require.Eventually(t, func() bool { st := e.stats("q"); return st.Length == 4 && st.Busy == 0 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	require.Len(t, calls, 1, "the running call finished, no other started")
	mu.Unlock()
	for _, id := range []string{"b", "c", "d", "e"} {
		info, err := e.store.GetJob(e.ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, -1, info.Queued.RetryCount, "%s went back untouched", id)
	}
	require.NoError(t, n.ResumeQueue(e.ctx, "q"))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 5 }, 10*time.Second, 10*time.Millisecond)
}

// docs/contract.md §9: three nodes with Concurrency 5 each never run more
// than max_concurrency (2) handler calls of the queue at once; permits a
// dead holder left behind come back within LeaseTTL.
func TestNodeMaxConcurrencyAcrossNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	network := clustertest.NewNetwork()
	var seeds []string
	var running, peak, calls atomic.Int64
	handler := func(ctx context.Context, b *orderly.Batch) error {
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		running.Add(-1)
		calls.Add(1)
		return nil
	}
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "limited", Shards: 6}))
	// A holder that died with both permits: nothing runs until they expire.
	n, err := e.store.SetPermits(e.ctx, "limited", "dead-node", 2, 2, time.Second)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	jobs := make([]client.Job, 60)
	for i := range jobs {
		jobs[i] = client.Job{ID: fmt.Sprintf("id-%d", i)}
	}
	e.enqueue("limited", jobs...)
	start := time.Now()
	for _, name := range []string{"n1", "n2", "n3"} {
		tr, addr := network.Transport(t)
		nd, err := orderly.NewNode(e.store, &orderly.Config{
			Name: name, Logger: testLogger(t), LeaseTTL: time.Second, Concurrency: 5,
			Cluster: orderly.WithTransport(&orderly.ClusterConfig{Bind: addr, Join: seeds, RejoinInterval: 300 * time.Millisecond}, tr),
			Workers: []orderly.Worker{{Queue: "limited", Shards: 6, MaxConcurrency: 2, Prefetch: 1, Handler: handler}},
		})
		require.NoError(t, err)
		require.NoError(t, nd.Start(e.ctx))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			nd.StopAndCancel(ctx)
		})
		seeds = append(seeds, addr)
	}
	require.Eventually(t, func() bool { return calls.Load() >= 60 && e.stats("limited").Length == 0 }, 30*time.Second, 10*time.Millisecond)
	require.LessOrEqual(t, peak.Load(), int64(2), "never more than max_concurrency calls at once")
	require.Equal(t, int64(2), peak.Load(), "the limit is used")
	// The dead holder's permits expired after about a second (LeaseTTL):
	// the work could not have finished before.
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
}

// docs/contract.md §9: two nodes together start handler calls of a
// rate-limited queue at no more than burst + rate * t over any stretch of
// time t (with slack for the delay between a token and its call's start).
func TestNodeRateLimitAcrossNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	network := clustertest.NewNetwork()
	var seeds []string
	var mu sync.Mutex
	var starts []time.Time
	handler := func(ctx context.Context, b *orderly.Batch) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	}
	const rate, burst, total = 20.0, 5, 50
	var nodes []*orderly.Node
	for _, name := range []string{"n1", "n2"} {
		tr, addr := network.Transport(t)
		nd, err := orderly.NewNode(e.store, &orderly.Config{
			Name: name, Logger: testLogger(t), LeaseTTL: time.Second, Concurrency: 5,
			Cluster: orderly.WithTransport(&orderly.ClusterConfig{Bind: addr, Join: seeds, RejoinInterval: 300 * time.Millisecond}, tr),
			Workers: []orderly.Worker{{Queue: "rated", Shards: 4, RateLimit: &orderly.RateLimit{PerSecond: rate, Burst: burst}, Handler: handler}},
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
	jobs := make([]client.Job, total)
	for i := range jobs {
		jobs[i] = client.Job{ID: fmt.Sprintf("id-%d", i)}
	}
	e.enqueue("rated", jobs...)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(starts)
		mu.Unlock()
		if n >= total {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	n := len(starts)
	mu.Unlock()
	if n < total {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		for _, g := range strings.Split(buf.String(), "\n\n") {
			if strings.Contains(g, "orderly/actors/shard") || strings.Contains(g, "controls.go") {
				t.Log(g)
			}
		}
		for i, nd := range nodes {
			st, err := nd.Status(e.ctx)
			t.Logf("n%d: %+v (err %v)", i+1, st, err)
		}
		t.Logf("queue: %+v", e.stats("rated"))
		t.Fatalf("only %d of %d calls started", n, total)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range starts {
		for j := i; j < len(starts); j++ {
			calls := float64(j - i + 1)
			bound := burst + rate*starts[j].Sub(starts[i]).Seconds() + rate*0.1 + 1
			require.LessOrEqual(t, calls, bound, "calls %d to %d started within %s", i, j, starts[j].Sub(starts[i]))
		}
	}
}
