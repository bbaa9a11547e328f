package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Queue controls and periodic jobs (docs/contract.md §9).

var controlTests = []testCase{
	{"Controls_PauseKeptAndShown", testPauseKept, needNone},
	{"Controls_PermitsBoundedAndExpire", testPermits, needNone},
	{"Controls_TokenBucket", testTokenBucket, needNone},
	{"Controls_PeriodicTickMovesOnce", testTicks, needNone},
	{"Controls_PeriodicTickEnqueuedOnce", testEnqueueTick, needNone},
}

// docs/contract.md §9: pause and resume are kept per queue, shown by
// Controls and Stats, refused for an unknown queue, and change nothing of
// the queue's jobs (a paused queue accepts enqueues).
func testPauseKept(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 1}))
	ctl, err := e.s.Controls(e.ctx, e.queue, "other", "never-registered")
	require.NoError(t, err)
	require.Equal(t, []persistence.QueueControl{{}, {}, {}}, ctl)

	require.NoError(t, e.s.SetPaused(e.ctx, e.queue, true))
	require.NoError(t, e.s.SetPaused(e.ctx, e.queue, true)) // idempotent
	e.enqueue(job("a", "v", 1))
	require.NotNil(t, e.get("a"))
	ctl, err = e.s.Controls(e.ctx, "other", e.queue)
	require.NoError(t, err)
	require.Equal(t, []persistence.QueueControl{{Paused: false}, {Paused: true}}, ctl)
	st, err := e.s.Stats(e.ctx, e.queue, "other")
	require.NoError(t, err)
	require.True(t, st[0].Paused)
	require.False(t, st[1].Paused)
	require.EqualValues(t, 1, st[0].Length)

	require.ErrorIs(t, e.s.SetPaused(e.ctx, "never-registered", true), persistence.ErrUnknownQueue)
	_, err = e.s.Controls(e.ctx, "bad{name")
	require.ErrorIs(t, err, persistence.ErrInvalid)

	require.NoError(t, e.s.SetPaused(e.ctx, e.queue, false))
	ctl, err = e.s.Controls(e.ctx, e.queue)
	require.NoError(t, err)
	require.False(t, ctl[0].Paused)
	require.Equal(t, []string{"a"}, ids(e.own(0).next(1).Batch))
}

// docs/contract.md §9: the max_concurrency permits of a queue never exceed
// the limit across holders, are renewed and released by their holder, and
// those of a holder that stops renewing come back once they expire.
func testPermits(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	long := time.Minute
	set := func(holder string, want int, ttl time.Duration) int {
		t.Helper()
		n, err := e.s.SetPermits(e.ctx, e.queue, holder, want, 3, ttl)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 2, set("a", 2, long))
	require.Equal(t, 1, set("b", 5, long), "only one left")
	require.Equal(t, 0, set("c", 1, long))
	require.Equal(t, 2, set("a", 2, long), "renewed")
	require.Equal(t, 1, set("a", 1, long), "shrunk")
	require.Equal(t, 2, set("b", 5, long), "a's freed permit")
	require.Equal(t, 0, set("b", 0, long), "released")
	require.Equal(t, 2, set("c", 2, long))

	// c stops renewing: its permits expire and go to another holder.
	require.Equal(t, 2, set("c", 2, 300*time.Millisecond))
	require.Equal(t, 0, set("d", 3, long))
	require.Eventually(t, func() bool { return set("d", 3, long) == 2 }, 10*time.Second, 50*time.Millisecond)

	_, err := e.s.SetPermits(e.ctx, e.queue, "x#1", 1, 3, long)
	require.ErrorIs(t, err, persistence.ErrInvalid)
	_, err = e.s.SetPermits(e.ctx, e.queue, "x", 1, 0, long)
	require.ErrorIs(t, err, persistence.ErrInvalid)
}

// docs/contract.md §9: the rate_limit bucket starts full (burst tokens),
// grants no more than it holds, says how long until the next token, and
// refills with time.
func testTokenBucket(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	takeAt := func(want int, perSecond float64) (int, time.Duration) {
		t.Helper()
		n, wait, err := e.s.TakeTokens(e.ctx, e.queue, want, perSecond, 3)
		require.NoError(t, err)
		return n, wait
	}
	take := func(want int) (int, time.Duration) { t.Helper(); return takeAt(want, 10) }
	// At one token every 1000 s the bucket refills nothing between these
	// calls, however slow the machine.
	n, _ := takeAt(2, 0.001)
	require.Equal(t, 2, n)
	n, _ = takeAt(5, 0.001)
	require.Equal(t, 1, n, "the rest of the burst")
	n, wait := takeAt(1, 0.001)
	require.Equal(t, 0, n)
	require.Greater(t, wait, 990*time.Second, "one token every 1000 s")
	require.LessOrEqual(t, wait, 1000*time.Second)
	require.Eventually(t, func() bool { n, _ := take(1); return n == 1 }, 10*time.Second, 20*time.Millisecond, "10 a second")
	// In a burst of takes, no more than burst + rate * elapsed are granted.
	start := time.Now()
	got := 0
	for range 50 {
		n, _ := take(1)
		got += n
	}
	require.LessOrEqual(t, float64(got), 3+10*time.Since(start).Seconds()+1)

	_, _, err := e.s.TakeTokens(e.ctx, e.queue, 1, 0, 3)
	require.ErrorIs(t, err, persistence.ErrInvalid)
}

// docs/contract.md §9: a periodic job's tick moves forward once: only the
// first caller for a tick wins, never an earlier tick.
func testTicks(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	last, err := e.s.LastTicks(e.ctx, "a", "b")
	require.NoError(t, err)
	require.Equal(t, []time.Time{{}, {}}, last)
	t1 := time.UnixMilli(1_700_000_000_000)
	won, err := e.s.AdvanceTick(e.ctx, "a", t1)
	require.NoError(t, err)
	require.True(t, won)
	won, err = e.s.AdvanceTick(e.ctx, "a", t1)
	require.NoError(t, err)
	require.False(t, won, "the same tick again")
	won, err = e.s.AdvanceTick(e.ctx, "a", t1.Add(-time.Second))
	require.NoError(t, err)
	require.False(t, won, "an earlier tick")
	won, err = e.s.AdvanceTick(e.ctx, "a", t1.Add(time.Second))
	require.NoError(t, err)
	require.True(t, won)
	last, err = e.s.LastTicks(e.ctx, "a", "b")
	require.NoError(t, err)
	require.True(t, last[0].Equal(t1.Add(time.Second)), "%v", last[0])
	require.True(t, last[1].IsZero())
}

// docs/contract.md §9: each tick of a periodic job is enqueued exactly once,
// however many callers try it at once and however often one retries: the
// check and the enqueue are one step. An earlier tick is refused; a later one
// merges with the queued job like any enqueue.
func testEnqueueTick(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	t1 := time.UnixMilli(1_700_000_000_000)
	tickJob := func(at time.Time) persistence.NewJob {
		sc := persistence.UnixSeconds(at)
		return persistence.NewJob{ID: "report", Payload: []byte(`{"run":true}`), Score: &sc}
	}
	var wg sync.WaitGroup
	var wins atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := e.s.EnqueueTick(e.ctx, e.queue, "nightly", t1, tickJob(t1))
			assert.NoError(t, err)
			if won {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, wins.Load(), "one of the concurrent callers enqueues the tick")
	info, err := e.s.GetJob(e.ctx, e.queue, "report")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 1)

	won, err := e.s.EnqueueTick(e.ctx, e.queue, "nightly", t1.Add(-time.Minute), tickJob(t1.Add(-time.Minute)))
	require.NoError(t, err)
	require.False(t, won, "an earlier tick")
	won, err = e.s.EnqueueTick(e.ctx, e.queue, "other", t1, tickJob(t1))
	require.NoError(t, err)
	require.True(t, won, "ticks are kept per periodic job")
	t2 := t1.Add(time.Minute)
	won, err = e.s.EnqueueTick(e.ctx, e.queue, "nightly", t2, tickJob(t2))
	require.NoError(t, err)
	require.True(t, won)
	info, err = e.s.GetJob(e.ctx, e.queue, "report")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 1, "equal payloads merge; the lower score stays")
	require.Equal(t, persistence.UnixSeconds(t1), info.Queued.Payloads[0].Score)

	_, err = e.s.EnqueueTick(e.ctx, e.queue, "", t2, tickJob(t2))
	require.ErrorIs(t, err, persistence.ErrInvalid)
	_, err = e.s.EnqueueTick(e.ctx, e.queue, "nightly", t2, persistence.NewJob{})
	require.ErrorIs(t, err, persistence.ErrInvalid)
}
