package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// testLogger returns the logger of a test's nodes: their warnings and
// errors go to the test's log, so that a failing test shows them.
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.close) // registered before the nodes' cleanups, so it runs after them
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testWriter writes to a test's log until the test ends; a node goroutine
// that logs later is not reported.
type testWriter struct {
	mu   sync.Mutex // guards done and calls to t.Log
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
}

type env struct {
	t      *testing.T
	store  *redisstore.Store
	client *client.Client
	ctx    context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := redistest.New(t)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	return &env{t: t, store: s, client: c, ctx: context.Background()}
}

func (e *env) start(cfg orderly.Config) *orderly.Node {
	e.t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(e.t)
	}
	if cfg.Name == "" {
		cfg.Name = "test-node"
	}
	n, err := orderly.NewNode(e.store, &cfg)
	require.NoError(e.t, err)
	require.NoError(e.t, n.Start(e.ctx))
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(e.t, n.Stop(ctx))
	})
	require.Eventually(e.t, func() bool { return n.Ready(e.ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	return n
}

func (e *env) enqueue(queue string, jobs ...client.Job) {
	e.t.Helper()
	require.NoError(e.t, e.client.Enqueue(e.ctx, queue, jobs...))
}

func (e *env) stats(queue string) persistence.QueueStats {
	e.t.Helper()
	st, err := e.store.Stats(e.ctx, queue)
	require.NoError(e.t, err)
	return st[0]
}

// calls records handler calls per id.
type calls struct {
	mu  sync.Mutex // guards got
	got map[string][][]string
}

func (c *calls) add(b *orderly.Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.got == nil {
		c.got = map[string][][]string{}
	}
	for _, j := range b.Jobs {
		var ps []string
		for _, p := range j.Payloads {
			ps = append(ps, string(p.Data))
		}
		c.got[j.ID] = append(c.got[j.ID], ps)
	}
}

func (c *calls) of(id string) [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[id]
}

// Payloads of one id enqueued in any order merge and reach the handler in
// score order, in one call.
func TestNodeProcessesInScoreOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "orders", Shards: 2}))
	e.enqueue("orders", client.Job{ID: "a", Payload: []byte("v3"), Score: client.Score(3)})
	e.enqueue("orders", client.Job{ID: "a", Payload: []byte("v1"), Score: client.Score(1)},
		client.Job{ID: "b", Payload: []byte("only")})
	e.enqueue("orders", client.Job{ID: "a", Payload: []byte("v2"), Score: client.Score(2)},
		client.Job{ID: "a", Payload: []byte("v1"), Score: client.Score(9)}) // duplicate payload: lower score kept
	var got calls
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "orders", Shards: 2,
		Handler: func(ctx context.Context, b *orderly.Batch) error { got.add(b); return nil },
	}}})
	require.Eventually(t, func() bool { return e.stats("orders").Processed == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, [][]string{{"v1", "v2", "v3"}}, got.of("a"))
	require.Equal(t, [][]string{{"only"}}, got.of("b"))
}

func TestNodeRetriesThenMorgue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var attempts atomic.Int32
	dead := make(chan []orderly.Job, 1)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, MaxRetryCount: 2, RetryIn: orderly.LinearRetry(20 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				if j.ID == "bad" {
					attempts.Add(1)
					return fmt.Errorf("attempt %d failed", j.RetryCount+1)
				}
			}
			return nil
		},
		RetriesExhausted: func(ctx context.Context, jobs []orderly.Job) { dead <- jobs },
	}}})
	e.enqueue("q", client.Job{ID: "bad", Payload: []byte("p")}, client.Job{ID: "good"})
	select {
	case jobs := <-dead:
		require.Len(t, jobs, 1)
		require.Equal(t, "bad", jobs[0].ID)
		require.Equal(t, "p", string(jobs[0].Payloads[0].Data))
		require.Equal(t, "attempt 2 failed", jobs[0].Error)
	case <-time.After(10 * time.Second):
		t.Fatal("retries_exhausted was not called")
	}
	require.EqualValues(t, 3, attempts.Load(), "performed max_retry_count+1 times")
	st := e.stats("q")
	require.EqualValues(t, 1, st.MorgueLength)
	require.EqualValues(t, 1, st.Processed)
	require.EqualValues(t, 3, st.Failed)
}

func TestNodePartialFailureAndPanic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	seen := map[string]int{}
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, BatchSize: 10, RetryIn: orderly.LinearRetry(10 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			failed := map[string]error{}
			for _, j := range b.Jobs {
				seen[j.ID]++
				if j.ID == "panic" && seen[j.ID] == 1 {
					panic("boom")
				}
				if j.ID == "flaky" && seen[j.ID] == 1 {
					failed[j.ID] = errors.New("try again")
				}
			}
			return orderly.FailIDs(failed)
		},
	}}})
	e.enqueue("q", client.Job{ID: "flaky"}, client.Job{ID: "ok"})
	require.Eventually(t, func() bool { st := e.stats("q"); return st.Processed == 2 }, 10*time.Second, 10*time.Millisecond)
	e.enqueue("q", client.Job{ID: "panic"})
	require.Eventually(t, func() bool { st := e.stats("q"); return st.Processed == 3 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"flaky": 2, "ok": 1, "panic": 2}, seen)
	require.EqualValues(t, 2, e.stats("q").Failed)
}

func TestNodeGracefulStopFinishesTheBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{})
	var cancelled atomic.Bool
	cfg := orderly.Config{Name: "graceful", Logger: testLogger(t), Workers: []orderly.Worker{{
		Queue: "q", Shards: 3,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			close(started)
			select {
			case <-time.After(300 * time.Millisecond):
				return nil
			case <-ctx.Done():
				cancelled.Store(true)
				return ctx.Err()
			}
		},
	}}}
	n, err := orderly.NewNode(e.store, &cfg)
	require.NoError(t, err)
	require.NoError(t, n.Start(e.ctx))
	e.enqueue("q", client.Job{ID: "a"})
	<-started
	require.NoError(t, n.Stop(e.ctx))
	require.False(t, cancelled.Load())
	st := e.stats("q")
	require.EqualValues(t, 1, st.Processed)
	require.EqualValues(t, 0, st.Busy)
	for sh := range 3 {
		_, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "other", time.Minute)
		require.NoError(t, err, "lease of shard %d released", sh)
	}
}

func TestNodeStopDeadlineCancelsAndRedelivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{})
	cfg := orderly.Config{Name: "deadline", Logger: testLogger(t), Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		},
	}}}
	n, err := orderly.NewNode(e.store, &cfg)
	require.NoError(t, err)
	require.NoError(t, n.Start(e.ctx))
	e.enqueue("q", client.Job{ID: "a", Payload: []byte("x")})
	<-started
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	require.NoError(t, n.Stop(ctx))
	info, err := e.store.GetJob(e.ctx, "q", "a")
	require.NoError(t, err)
	require.NotNil(t, info.Queued, "the cut batch is back in the queue")
	require.Equal(t, -1, info.Queued.RetryCount, "a shutdown is not a failure")
	require.EqualValues(t, 0, e.stats("q").Failed)
}

func TestNodeConcurrencyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var running, peak atomic.Int32
	e.start(orderly.Config{Concurrency: 2, Scheduler: "seq", Workers: []orderly.Worker{{
		Queue: "q", Shards: 6,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			running.Add(-1)
			return nil
		},
	}}})
	var jobs []client.Job
	for i := range 30 {
		jobs = append(jobs, client.Job{ID: strconv.Itoa(i)})
	}
	e.enqueue("q", jobs...)
	require.Eventually(t, func() bool { return e.stats("q").Processed == 30 }, 20*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 2, peak.Load())
}

func TestNodeDelayedJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := make(chan time.Time, 1)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			done <- time.Now()
			return nil
		},
	}}})
	enqueued := time.Now()
	e.enqueue("q", client.Job{ID: "later", PerformIn: 400 * time.Millisecond})
	select {
	case at := <-done:
		require.GreaterOrEqual(t, at.Sub(enqueued), 400*time.Millisecond)
	case <-time.After(10 * time.Second):
		t.Fatal("delayed job never ran")
	}
}

func TestNodeEnqueueByActorMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var got calls
	n := e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 2,
		Handler: func(ctx context.Context, b *orderly.Batch) error { got.add(b); return nil },
	}}})
	score := 7.0
	res, err := n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{
		{Id: "m1", Payload: []byte("hello"), Score: &score},
	}})
	require.NoError(t, err)
	require.Equal(t, int64(1), res.GetEnqueued())
	require.Eventually(t, func() bool { return len(got.of("m1")) == 1 }, 10*time.Second, 10*time.Millisecond)

	res, err = n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{{Id: ""}}})
	require.NoError(t, err)
	require.Equal(t, messages.Code_CODE_INVALID, res.GetError().GetCode())
	require.Equal(t, "jobs[0].id", res.GetError().GetField())

	res, err = n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "nope", Jobs: []*messages.Job{{Id: "x"}}})
	require.NoError(t, err)
	require.Equal(t, messages.Code_CODE_UNKNOWN_QUEUE, res.GetError().GetCode())

	stats, err := n.AskStats(e.ctx, &messages.StatsRequest{})
	require.NoError(t, err)
	require.Equal(t, "q", stats.GetQueues()[0].GetName())

	// What a remote process may also ask.
	members, err := orderly.AskEnqueueActor(e.ctx, n, &messages.MembersRequest{})
	require.NoError(t, err)
	require.Equal(t, "test-node", members.(*messages.MembersResponse).GetMembers()[0].GetName())
}

func TestNodeConfigErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := func(context.Context, *orderly.Batch) error { return nil }
	cases := []struct {
		cfg  orderly.Config
		want string
	}{
		{orderly.Config{}, "at least one worker"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q"}}}, "Handler is required"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "a b", Handler: h}}}, "queue"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q", BatchSize: 5000, Handler: h}}}, "BatchSize"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q", MaxRetryCount: -2, Handler: h}}}, "MaxRetryCount"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q", ConcurrentCalls: -1, Handler: h}}}, "ConcurrentCalls"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q", ConcurrentCalls: 1001, Handler: h}}}, "ConcurrentCalls"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q", ConcurrentCalls: 4, MaxConcurrency: 2, Handler: h}}}, "needs ConcurrentCalls 1"},
		{orderly.Config{Workers: []orderly.Worker{{Queue: "q", Handler: h}, {Queue: "q", Handler: h}}}, "two workers"},
		{orderly.Config{Scheduler: "fast", Workers: []orderly.Worker{{Queue: "q", Handler: h}}}, "Scheduler"},
		{orderly.Config{LeaseTTL: time.Millisecond, Workers: []orderly.Worker{{Queue: "q", Handler: h}}}, "LeaseTTL"},
	}
	for _, c := range cases {
		_, err := orderly.NewNode(e.store, &c.cfg)
		require.ErrorContains(t, err, c.want)
	}
	// A shard count that contradicts the store fails Start.
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "fixed", Shards: 4}))
	n, err := orderly.NewNode(e.store, &orderly.Config{Logger: testLogger(t), Workers: []orderly.Worker{{Queue: "fixed", Shards: 5, Handler: h}}})
	require.NoError(t, err)
	require.ErrorIs(t, n.Start(e.ctx), persistence.ErrShardCountMismatch)
}

// TestNodeOrderingUnderLoad: 20 ids x 500 payloads with rising scores,
// concurrency 5, random handler failures; the recorded history shows, per
// id, no overlapping calls, score order, and nothing lost.
func TestNodeOrderingUnderLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var rec history.Recorder
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var rmu sync.Mutex // guards rng
	rng := rand.New(rand.NewPCG(seed, 1))
	e.start(orderly.Config{Concurrency: 5, Workers: []orderly.Worker{{
		Queue: "load", Shards: 8, BatchSize: 4, RetryIn: orderly.LinearRetry(2 * time.Millisecond),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			start := time.Now()
			rmu.Lock()
			fail := map[string]error{}
			for _, j := range b.Jobs {
				if rng.IntN(10) == 0 {
					fail[j.ID] = errors.New("random failure")
				}
			}
			sleep := time.Duration(rng.IntN(500)) * time.Microsecond
			rmu.Unlock()
			time.Sleep(sleep)
			end := time.Now()
			for _, j := range b.Jobs {
				c := history.Call{ID: j.ID, Node: "n", Delivery: b.Delivery, Start: start, End: end, Acked: fail[j.ID] == nil}
				for _, p := range j.Payloads {
					c.Payloads = append(c.Payloads, history.Payload{Data: string(p.Data), Score: p.Score})
				}
				rec.Add(c)
			}
			return orderly.FailIDs(fail)
		},
	}}})

	rep := drainRising(t, e, &rec, "load", 20, 500)
	require.Zero(t, rep.Duplicates, "no crash, so no redelivery")
}

// drainRising enqueues per payloads with rising scores for each of ids ids
// into queue, from one goroutine per id, waits until the queue is drained
// and audits what the handlers recorded on rec (history.Check): nothing
// lost, no overlap per id, score order.
func drainRising(t *testing.T, e *env, rec *history.Recorder, queue string, ids, per int) history.Report {
	t.Helper()
	enqueued := map[string][]string{}
	var wg sync.WaitGroup
	for i := range ids {
		id := fmt.Sprintf("order-%d", i)
		for k := range per {
			enqueued[id] = append(enqueued[id], fmt.Sprintf("%s/%03d", id, k))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range per {
				require.NoError(t, e.client.Enqueue(e.ctx, queue, client.Job{ID: id, Payload: []byte(fmt.Sprintf("%s/%03d", id, k)), Score: client.Score(float64(k))}))
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { st := e.stats(queue); return st.Length == 0 && st.Busy == 0 }, 60*time.Second, 20*time.Millisecond)
	page, err := e.store.ListMorgue(e.ctx, queue, persistence.ListOptions{Limit: 1000})
	require.NoError(t, err)
	morgue := map[string][]string{}
	for _, m := range page.Entries {
		for _, p := range m.Payloads {
			morgue[m.ID] = append(morgue[m.ID], string(p.Data))
		}
	}
	rep := history.Check(rec.Calls(), enqueued, morgue)
	t.Log(rep.String())
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, ids*per, rep.Acked+morgueCount(morgue))
	return rep
}

func morgueCount(m map[string][]string) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// TestNodeSurvivesRedisOutage kills redis-server under a running node: the
// node keeps running, reports not ready, and resumes by itself when Redis
// returns; nothing is lost.
func TestNodeSurvivesRedisOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rdb := srv.Client(t)
	s, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	e := &env{t: t, store: s, client: c, ctx: context.Background()}
	var done sync.Map
	n := e.start(orderly.Config{LeaseTTL: time.Second, Workers: []orderly.Worker{{
		Queue: "q", Shards: 3,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				done.Store(j.ID, true)
			}
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "before"})
	require.Eventually(t, func() bool { _, ok := done.Load("before"); return ok }, 10*time.Second, 10*time.Millisecond)

	srv.Kill(t)
	require.Eventually(t, func() bool { return n.Ready(e.ctx) != nil }, 10*time.Second, 20*time.Millisecond, "not ready while Redis is down")
	require.Eventually(t, func() bool {
		st, err := n.Status(e.ctx)
		if err != nil {
			return false
		}
		for _, sh := range st.Shards {
			if sh.Epoch != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "no lease held: the lease guards fired")
	srv.Start(t)
	require.Eventually(t, func() bool { return n.Ready(e.ctx) == nil }, 15*time.Second, 20*time.Millisecond, "ready again")
	e.enqueue("q", client.Job{ID: "after"})
	require.Eventually(t, func() bool { _, ok := done.Load("after"); return ok }, 10*time.Second, 10*time.Millisecond)
}

func TestNodeQuietAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var done atomic.Int32
	n := e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 2,
		Handler: func(ctx context.Context, b *orderly.Batch) error { done.Add(int32(len(b.Jobs))); return nil },
	}}})
	require.NoError(t, n.Quiet(e.ctx))
	require.ErrorIs(t, n.Ready(e.ctx), orderly.ErrNotReady)
	// Quiet released the leases: another owner can take the shards at once.
	require.Eventually(t, func() bool {
		for sh := range 2 {
			l, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "probe", time.Minute)
			if err != nil {
				return false
			}
			require.NoError(t, e.store.ReleaseShard(e.ctx, l))
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	e.enqueue("q", client.Job{ID: "a"}, client.Job{ID: "b"})
	require.Never(t, func() bool { return done.Load() > 0 }, 100*time.Millisecond, 10*time.Millisecond, "a quiet node processes nothing")
	require.NoError(t, n.Resume(e.ctx))
	require.Eventually(t, func() bool { return done.Load() == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return n.Ready(e.ctx) == nil }, 10*time.Second, 10*time.Millisecond)
}

func TestNodeServerMiddlewareOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var trace []string
	mark := func(name string) orderly.Middleware {
		return func(next orderly.HandlerFunc) orderly.HandlerFunc {
			return func(ctx context.Context, b *orderly.Batch) error {
				mu.Lock()
				trace = append(trace, name+">")
				mu.Unlock()
				err := next(ctx, b)
				mu.Lock()
				trace = append(trace, "<"+name)
				mu.Unlock()
				return err
			}
		}
	}
	e.start(orderly.Config{Middleware: []orderly.Middleware{mark("outer"), mark("inner")}, Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			trace = append(trace, "handler")
			mu.Unlock()
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "a"})
	require.Eventually(t, func() bool { return e.stats("q").Processed == 1 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"outer>", "inner>", "handler", "<inner", "<outer"}, trace)
}

// Prefetch: a shard fetches up to Prefetch ids in one round trip and hands
// them to the handler BatchSize at a time, each call with its own delivery.
func TestNodePrefetch(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	e := &env{t: t, store: s, client: c, ctx: context.Background()}
	// The node has a client of its own, so that its round trips are
	// counted apart from the test's (enqueues, polling).
	rdb := redis.NewClient(&redis.Options{Addr: db.Addr})
	t.Cleanup(func() { rdb.Close() })
	nodeStore, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	var jobs []client.Job
	for i := range 30 {
		jobs = append(jobs, client.Job{ID: fmt.Sprintf("id-%02d", i)})
	}
	e.enqueue("q", jobs...)
	var mu sync.Mutex
	var sizes []int
	deliveries := map[string]bool{}
	// Scripts loaded and a connection open before counting: the first
	// test to run a script on the package's server would otherwise pay
	// a NOSCRIPT and a SCRIPT LOAD per script.
	require.NoError(t, nodeStore.LoadScripts(e.ctx))
	before := nodeStore.Counters()
	(&env{t: t, store: nodeStore, ctx: e.ctx}).start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, BatchSize: 2, Prefetch: 10,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			sizes = append(sizes, len(b.Jobs))
			require.False(t, deliveries[b.Delivery], "delivery %s reused", b.Delivery)
			deliveries[b.Delivery] = true
			return nil
		},
	}}})
	require.Eventually(t, func() bool { return e.stats("q").Processed == 30 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sizes, 15)
	for _, n := range sizes {
		require.Equal(t, 2, n)
	}
	// 3 fetches of 10 and a last empty one, plus registering the queue,
	// subscribing, reading the queue controls (at start, then once a
	// second), acquiring the lease, the morgue retention and renewals:
	// fewer round trips than the 15 calls and their 15 settlements.
	used := nodeStore.Counters().Sub(before).RoundTrips
	require.Less(t, used, int64(18), "round trips: %d", used)
}

// With the defaults a busy shard's window grows from 10 ids to 100: a
// backlog of 300 ids takes a handful of fetches, not the 30 that windows of
// 10 would take.
func TestNodeWindowGrowsUnderABacklog(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	e := &env{t: t, store: s, client: c, ctx: context.Background()}
	rdb := redis.NewClient(&redis.Options{Addr: db.Addr})
	t.Cleanup(func() { rdb.Close() })
	nodeStore, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	var jobs []client.Job
	for i := range 300 {
		jobs = append(jobs, client.Job{ID: fmt.Sprintf("id-%03d", i)})
	}
	e.enqueue("q", jobs...)
	require.NoError(t, nodeStore.LoadScripts(e.ctx))
	before := nodeStore.Counters()
	(&env{t: t, store: nodeStore, ctx: e.ctx}).start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(context.Context, *orderly.Batch) error { return nil },
	}}})
	require.Eventually(t, func() bool { return e.stats("q").Processed == 300 }, 10*time.Second, 10*time.Millisecond)
	// Fetches of 10, 20, 40, 80, 100 and 50 (and one empty), plus the
	// node's other round trips (see TestNodePrefetch).
	used := nodeStore.Counters().Sub(before).RoundTrips
	require.Less(t, used, int64(24), "round trips: %d", used)
}

// A stop deadline in the middle of a prefetched group: what was handled is
// acknowledged, the rest goes back to the queue untouched.
func TestNodePrefetchCutByStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	e.enqueue("q", client.Job{ID: "a"}, client.Job{ID: "b"}, client.Job{ID: "c"}, client.Job{ID: "d"})
	second := make(chan struct{})
	calls := 0
	cfg := orderly.Config{Name: "cut", Logger: testLogger(t), Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, BatchSize: 1, Prefetch: 4,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			calls++
			if calls == 2 {
				close(second)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		},
	}}}
	n, err := orderly.NewNode(e.store, &cfg)
	require.NoError(t, err)
	require.NoError(t, n.Start(e.ctx))
	<-second
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	require.NoError(t, n.Stop(ctx))
	st := e.stats("q")
	require.EqualValues(t, 1, st.Processed)
	require.EqualValues(t, 0, st.Failed)
	require.EqualValues(t, 3, st.Length)
	require.EqualValues(t, 3, st.Fresh, "retry counts unchanged")
}
