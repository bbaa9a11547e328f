package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Crash recovery, skipped ids and handler call deadlines (docs/contract.md
// §3.7).

var restoreTests = []testCase{
	{"Rule7_CrashRestore", testCrashRestore, needNone},
	{"Rule7_SkippedIdsGoBackUntouched", testSkipped, needNone},
	{"Deadline_KeptAndHonouredOnRestore", testDeadlineKeptOnRestore, needAdmin},
	{"Deadline_BoundCountsAtMostMaxCalls", testDeadlineMaxCalls, needNone},
	{"Deadline_FailureHoldOutlastsTheMorgue", testFailureHold, needAdmin},
}

// docs/contract.md §3.7: a new owner restores the in-flight record of a
// crashed one, merging as "failed job + queued job" without changing
// retry_count, and without counting anything.
func testCrashRestore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("b", "b1", 1))
	o := e.own(0)
	o.next(1)
	o.next(0, o.fail("b", "earlier", 0)) // b: retry_count 0, due now
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	e.enqueue(job("a", "a1", 1))

	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	crashed, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Second)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, crashed, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, ids(res.Batch))
	// node-a dies here. New payloads arrive for a in the meantime.
	later := job("a", "a2", 2)
	later.PerformAt = e.at(time.Hour)
	e.enqueue(later)

	var restored int
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		o2, n, err := e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
		if errors.Is(err, persistence.ErrLeaseHeld) {
			return false
		}
		require.NoError(t, err)
		require.Greater(t, o2.Epoch, crashed.Epoch)
		restored = n
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, restored)

	a := e.get("a")
	require.Equal(t, []string{"a1@1", "a2@2"}, pl(a.Payloads))
	require.Equal(t, -1, a.RetryCount)
	require.True(t, a.PerformAt.Equal(epoch), "restored perform_at %v", a.PerformAt)
	b := e.get("b")
	require.Equal(t, 0, b.RetryCount)
	require.Equal(t, "earlier", b.Error)
	st := e.stats()
	require.EqualValues(t, 0, st.Busy)
	require.EqualValues(t, 0, st.Processed)
	require.EqualValues(t, 1, st.Failed)
}

// Ids of a batch that a stop cut short go back as they were: retry count,
// perform_at and error unchanged, counted neither processed nor failed.
func testSkipped(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("b", "b1", 1))
	o := e.own(0)
	o.next(1)
	o.next(0, o.fail("b", "earlier", 0)) // b: retry_count 0, due now
	e.enqueue(job("a", "a1", 1), job("c", "c1", 1))
	b := o.next(5).Batch
	require.Equal(t, []string{"a", "b", "c"}, ids(b))
	res, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Settle: b.Seq, NextSeq: b.Seq + 1, MaxRetryCount: 25,
		Failures: []persistence.Failure{o.fail("a", "bad", time.Hour)}, Skipped: []string{"b", "c", "not-in-batch"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.Processed)
	require.Equal(t, 1, res.Failed)
	require.Equal(t, 2, res.Restored)
	j := e.get("b")
	require.Equal(t, 0, j.RetryCount)
	require.Equal(t, "earlier", j.Error)
	require.True(t, j.PerformAt.Equal(epoch))
	require.Equal(t, -1, e.get("c").RetryCount)
	require.Equal(t, 0, e.get("a").RetryCount)
	st := e.stats()
	require.EqualValues(t, 2, st.Failed, "b's earlier failure and a's")
	require.EqualValues(t, 0, st.Processed)
}

// docs/contract.md §2.1 and §6.4 (Orderly-Deadline): each call's deadline is
// kept with the in-flight record, and ids restored from it are not fetched
// again before it; ids whose call a stop cut while it ran wait the same way,
// ids that were skipped before their call started do not.
func testDeadlineKeptOnRestore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 3, MaxRetryCount: 25,
		CallTimeout: 30 * time.Second, CallSize: 1})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 3)
	procs, err := e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, procs[0].Deadline.Equal(epoch.Add(90*time.Second)), "three calls of 30 s: deadline bound %v", procs[0].Deadline)

	// The owner goes away 5 s later: its calls end by min(bound, now + 30 s).
	e.clock.Advance(5 * time.Second)
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	l, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch, "no call before the restored calls' deadline")
	require.True(t, res.NextDue.Equal(epoch.Add(35*time.Second)), "next due %v", res.NextDue)
	require.True(t, e.get("a").PerformAt.Equal(epoch), "perform_at is unchanged")
	_, err = e.admin().PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 2, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch, "perform all now does not cut a deadline short")

	e.clock.Advance(30 * time.Second)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 3, Fetch: 10, MaxRetryCount: 25,
		CallTimeout: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, ids(res.Batch))

	// A stop cut a's call while it ran; b's call never started; c succeeded.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 3, NextSeq: 4, Fetch: 10, MaxRetryCount: 25,
		Interrupted: []string{"a"}, Skipped: []string{"b"}})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, ids(res.Batch), "a skipped id goes back at once")
	require.Equal(t, 2, res.Restored)
	require.Equal(t, 1, res.Processed)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 4, NextSeq: 5, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(epoch.Add(45*time.Second)), "the cut call ends by its deadline: next due %v", res.NextDue)
	e.clock.Advance(10 * time.Second)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 6, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
}

// A long window bounded by time: with MaxCalls the deadline bound counts at
// most MaxCalls calls, so a restore holds its ids no longer than a window of
// MaxCalls calls would (docs/storage.md §4).
func testDeadlineMaxCalls(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1), job("d", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", 10*time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 4, MaxRetryCount: 25,
		CallTimeout: 30 * time.Second, CallSize: 1, MaxCalls: 2})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 4)
	procs, err := e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, procs[0].Deadline.Equal(epoch.Add(60*time.Second)), "four calls, at most two counted: deadline bound %v", procs[0].Deadline)

	// Fewer calls than MaxCalls count as they are.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 4, MaxRetryCount: 25,
		Skipped: []string{"a"}, CallTimeout: 30 * time.Second, CallSize: 1, MaxCalls: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	procs, err = e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, procs[0].Deadline.Equal(epoch.Add(30*time.Second)), "one call: deadline bound %v", procs[0].Deadline)

	// The owner goes away: the restored id waits for the capped bound.
	e.clock.Advance(5 * time.Second)
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	l, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", 10*time.Minute)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(epoch.Add(30*time.Second)), "next due %v", res.NextDue)
}

// A failure's Hold (a timed-out call, docs/contract.md §2.1) keeps its id
// from being fetched before it, whatever the settlement does: with retries
// left (and "perform all now" does not cut it short), and with retries
// exhausted, for what is left of the id after the move to the morgue and
// for what was queued for it meanwhile. perform_at is not changed by it.
func testFailureHold(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("r", "r1", 1))
	o := e.own(0)
	require.Equal(t, []string{"r"}, ids(o.next(1).Batch))
	e.enqueue(job("x", "x1", 1), job("x", "x2", 2), job("y", "y1", 1))
	hold := e.at(2 * time.Second)
	o.next(0, persistence.Failure{ID: "r", Error: "timed out", RetryAt: e.at(0), Hold: hold})
	require.True(t, e.get("r").PerformAt.Equal(e.clock.Now()), "perform_at as the failure gave it")

	o.maxRetry = 0 // every failure exhausts the retries
	require.Equal(t, []string{"x", "y"}, ids(o.next(3).Batch), "r is held")
	e.enqueue(job("y", "y2", 2)) // queued while y1 is in flight
	res := o.next(3,
		persistence.Failure{ID: "x", Error: "timed out", Hold: hold},
		persistence.Failure{ID: "y", Error: "timed out", Hold: hold})
	require.Len(t, res.Dead, 2, "x1 and y1 die")
	require.Nil(t, res.Batch, "nothing before the hold: not r, not x2 (what is left of x), not y2 (queued meanwhile)")
	require.True(t, res.NextDue.Equal(hold), "next due %v", res.NextDue)
	_, err := e.admin().PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Nil(t, o.next(3).Batch, "perform all now does not cut a hold short")

	e.clock.Advance(2 * time.Second)
	got := o.next(3).Batch
	require.Equal(t, []string{"r", "x", "y"}, ids(got))
	require.Equal(t, []string{"x2@2"}, pl(jobOf(got, "x").Payloads))
	require.Equal(t, []string{"y2@2"}, pl(jobOf(got, "y").Payloads))
	require.Equal(t, 0, jobOf(got, "r").RetryCount)
}
