package pull_test

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/pull"
)

// heldEnv is a real node on real Redis with one pull queue, "held": one
// shard, batch 1, windows of up to 200 ids whose calls all wait at once.
func heldEnv(t *testing.T, obs orderly.Observer, mw ...orderly.Middleware) *env {
	t.Helper()
	return startEnv(t, func(b *pull.Broker) orderly.Config {
		return orderly.Config{Observer: obs, Middleware: mw,
			Workers: []orderly.Worker{{Queue: "held", Shards: 1, BatchSize: 1, Prefetch: 200, ConcurrentCalls: 200,
				Timeout: 20 * time.Second, RetryIn: orderly.LinearRetry(10 * time.Millisecond),
				Handler: b.Handler("held", pull.Options{BatchSize: 1, Lease: 10 * time.Second})}}}
	})
}

// enqueueHeld enqueues n ids h0..h(n-1) to "held".
func (e *env) enqueueHeld(n int) {
	e.t.Helper()
	var jobs []client.Job
	for i := range n {
		jobs = append(jobs, client.Job{ID: "h" + strconv.Itoa(i), Payload: []byte(`1`)})
	}
	require.NoError(e.t, e.client.Enqueue(context.Background(), "held", jobs...))
}

// drained reports whether queue has nothing queued or in flight.
func (e *env) drained(queue string) bool {
	st, err := e.store.Stats(context.Background(), queue)
	require.NoError(e.t, err)
	return st[0].Length == 0 && st[0].Busy == 0
}

// The calls of a window wait for a pull without a goroutine each: the
// broker holds them (internal/deferred), and an answer ends them. (The
// shard learns from its first call that its handler holds calls: the
// calls that started before it returned took goroutines of the shard's
// pool, which end once the shard runs dry.)
func TestHeldCallsHoldNoGoroutines(t *testing.T) {
	e := heldEnv(t, nil)
	e.enqueueHeld(50)
	for drained := 0; drained < 50; {
		l := e.pullSome(adminToken, "held", 50)
		status, out := e.answer(adminToken, "held", l.Lease, `{}`)
		require.Equal(t, http.StatusOK, status, out)
		drained += len(l.Jobs)
	}
	require.Eventually(t, func() bool { return e.drained("held") }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // the shard runs dry: its pool's goroutines end
	before := runtime.NumGoroutine()
	e.enqueueHeld(200)
	require.Eventually(t, func() bool { return e.broker.Stats()["held"].Pending == 200 }, 10*time.Second, 5*time.Millisecond)
	during := runtime.NumGoroutine()
	require.Less(t, during-before, 20, "200 calls waiting for a pull")

	l := e.pullSome(adminToken, "held", 200)
	require.Len(t, l.Jobs, 200)
	status, out := e.answer(adminToken, "held", l.Lease, `{}`)
	require.Equal(t, http.StatusOK, status, out)
	require.Eventually(t, func() bool { return e.drained("held") }, 10*time.Second, 10*time.Millisecond)
}

// §3.13 on a held call: cancelling the id ends the call that holds it (its
// lease is lost for it: the answer commits nothing and says so), the
// window's other calls go on, and the id goes to the morgue.
func TestHeldCallCancelEndsOnlyItsCall(t *testing.T) {
	t.Parallel()
	e := heldEnv(t, nil)
	ctx := context.Background()
	e.enqueueHeld(3)
	require.Eventually(t, func() bool { return e.broker.Stats()["held"].Pending == 3 }, 10*time.Second, 5*time.Millisecond)
	l := e.pullSome(adminToken, "held", 1)
	id := l.Jobs[0].ID
	res, err := e.client.Cancel(ctx, "held", id)
	require.NoError(t, err)
	require.True(t, res.InFlight)
	require.Eventually(t, func() bool { return e.broker.Stats()["held"].Held == 0 }, 10*time.Second, 5*time.Millisecond,
		"the cancel ends the lease of the call")
	status, out := e.answer(adminToken, "held", l.Lease, `{}`)
	require.Equal(t, http.StatusConflict, status, out)
	require.Contains(t, out, pull.ReasonLost)

	rest := e.pullSome(adminToken, "held", 10)
	require.Len(t, rest.Jobs, 2, "the other calls of the window still wait")
	status, out = e.answer(adminToken, "held", rest.Lease, `{}`)
	require.Equal(t, http.StatusOK, status, out)
	require.Eventually(t, func() bool { return e.drained("held") }, 10*time.Second, 10*time.Millisecond)
	page, err := e.store.ListMorgue(ctx, "held", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, id, page.Entries[0].ID)
	require.Equal(t, "cancelled", page.Entries[0].Error)
}

// A held call reaches the Observer when it ends, not when its handler
// returned: with its failures, and a duration that covers the wait for the
// worker.
func TestHeldCallsReachTheObserver(t *testing.T) {
	t.Parallel()
	obs := &doneObserver{}
	e := heldEnv(t, obs)
	e.enqueueHeld(4)
	require.Eventually(t, func() bool { return e.broker.Stats()["held"].Pending == 4 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	require.Empty(t, obs.get(), "nothing ended yet")
	l := e.pullSome(adminToken, "held", 4)
	status, out := e.answer(adminToken, "held", l.Lease, `{"failed":{"`+l.Jobs[1].ID+`":"boom"}}`)
	require.Equal(t, http.StatusOK, status, out)
	calls := obs.get()
	require.Len(t, calls, 4, "each call, once its answer came")
	failed := 0
	for _, c := range calls {
		require.Equal(t, 1, c.ids)
		require.GreaterOrEqual(t, c.d, 300*time.Millisecond, "the wait for the worker counts")
		failed += c.failed
	}
	require.Equal(t, 1, failed)
}

// A middleware that replaces the broker's "held" error settles the call
// itself: the broker lets the call go (no pull gets it), and the call's
// outcome is the middleware's.
func TestHeldCallSettledByAMiddleware(t *testing.T) {
	t.Parallel()
	swallow := func(next orderly.HandlerFunc) orderly.HandlerFunc {
		return func(ctx context.Context, b *orderly.Batch) error {
			_ = next(ctx, b)
			return nil
		}
	}
	e := heldEnv(t, nil, swallow)
	e.enqueueHeld(5)
	require.Eventually(t, func() bool { return e.drained("held") }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, pull.Stats{}, e.broker.Stats()["held"])
	require.Nil(t, e.pull(adminToken, "held", 10, 0.2))
}

// doneObserver records BatchDone calls.
type doneObserver struct {
	mu    sync.Mutex
	calls []doneCall
}

type doneCall struct {
	ids, failed int
	d           time.Duration
}

func (o *doneObserver) BatchDone(_ persistence.ShardRef, ids, failed int, d time.Duration, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, doneCall{ids: ids, failed: failed, d: d})
}

func (o *doneObserver) LeaseLost(persistence.ShardRef) {}

func (o *doneObserver) get() []doneCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]doneCall(nil), o.calls...)
}
