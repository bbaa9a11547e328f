package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Success, failure and partial failure, and the dead report (docs/contract.md
// §3.4 to §3.6).

var settleTests = []testCase{
	{"Rule4_SuccessAcknowledges", testSuccess, needNone},
	{"Rule5_FailureRetries", testFailureRetries, needNone},
	{"Rule5_MorgueTakesLowestScoredPayloadOnly", testMorgueLowestOnly, needNone},
	{"Rule5_MorgueTakesWhatTheHandlerWasGiven", testMorgueWhatHandlerGot, needNone},
	{"Rule5_AttemptsBeforeMorgue", testAttemptsBeforeMorgue, needNone},
	{"Rule6_PartialFailure", testPartialFailure, needNone},
	{"Advance_RetryIsIdempotent", testAdvanceIdempotent, needNone},
	{"Rule5_DeadListReturnedOnRetriedAdvance", testDeadListOnRetriedAdvance, needNone},
	{"Rule5_DeadListHandedToTheNextOwner", testDeadListHandedToNextOwner, needNone},
}

// docs/contract.md §3.4: success removes the in-flight record and counts the
// ids.
func testSuccess(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("a", "w", 2), job("b", "v", 1))
	o := e.own(0)
	require.Len(t, o.next(5).Batch.Jobs, 2)
	require.EqualValues(t, 2, e.stats().Busy)
	procs, err := e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.Len(t, procs, 1)
	require.Equal(t, "node-a", procs[0].Owner)
	require.Equal(t, o.lease.Epoch, procs[0].Epoch)

	res := o.next(5)
	require.Nil(t, res.Batch)
	require.Equal(t, 2, res.Processed)
	st := e.stats()
	require.EqualValues(t, 2, st.Processed)
	require.EqualValues(t, 0, st.Busy)
	require.EqualValues(t, 0, st.Length)
	procs, err = e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.Empty(t, procs)
	_, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

// docs/contract.md §3.5: a failure increments retry_count, sets perform_at to
// the retry time and records the error; the job is not fetched before it.
func testFailureRetries(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1))
	o := e.own(0)
	o.next(1)
	res := o.next(1, o.fail("a", "first", 10*time.Second))
	require.Nil(t, res.Batch)
	require.Equal(t, 1, res.Failed)
	require.True(t, res.NextDue.Equal(e.at(10*time.Second)))
	j := e.get("a")
	require.Equal(t, 0, j.RetryCount)
	require.Equal(t, "first", j.Error)

	e.clock.Advance(10 * time.Second)
	b := o.next(1).Batch
	require.Equal(t, []string{"a"}, ids(b))
	require.Equal(t, 0, b.Jobs[0].RetryCount)
	require.Equal(t, "first", b.Jobs[0].Error)
	o.next(0, o.fail("a", "second", time.Second))
	j = e.get("a")
	require.Equal(t, 1, j.RetryCount)
	require.Equal(t, "second", j.Error)
	st := e.stats()
	require.EqualValues(t, 2, st.Failed)
	require.EqualValues(t, 1, st.Retries)
	require.EqualValues(t, 0, st.Fresh)
	require.Empty(t, res.Dead)
}

// docs/contract.md §3.5 and Lowkiq spec 21: at max_retry_count only the
// lowest-scored payload goes to the morgue; the rest is requeued fresh, due
// now.
func testMorgueLowestOnly(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("1", "v1", 0), job("1", "v2", 1))
	o := e.own(0)
	o.maxRetry = 1
	o.next(1)
	o.next(1, o.fail("1", "error", 0)) // retry_count 0, fetched again at once
	e.clock.Advance(time.Second)
	res := o.next(0, o.fail("1", "error", time.Hour))

	require.Len(t, res.Dead, 1)
	require.Equal(t, "1", res.Dead[0].ID)
	require.Equal(t, []string{"v1@0"}, pl(res.Dead[0].Payloads))
	require.Equal(t, "error", res.Dead[0].Error)
	require.Equal(t, 1, res.Dead[0].RetryCount)

	j := e.get("1")
	require.Equal(t, []string{"v2@1"}, pl(j.Payloads))
	require.Equal(t, -1, j.RetryCount)
	require.True(t, j.PerformAt.Equal(e.clock.Now()))
	require.Empty(t, j.Error)

	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	m := page.Entries[0]
	require.Equal(t, []string{"v1@0"}, pl(m.Payloads))
	require.Equal(t, "error", m.Error)
	require.True(t, m.UpdatedAt.Equal(e.clock.Now()))
	st := e.stats()
	require.EqualValues(t, 1, st.MorgueLength)
	require.EqualValues(t, 2, st.Failed)
}

// docs/contract.md §3 (edge cases): the payload that dies is the
// lowest-scored one the handler was given, not a lower one queued meanwhile.
func testMorgueWhatHandlerGot(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("x", "given", 5))
	o := e.own(0)
	o.maxRetry = 0
	o.next(1)
	e.enqueue(job("x", "queued", 1))
	res := o.next(0, o.fail("x", "dead", 0))
	require.Equal(t, []string{"given@5"}, pl(res.Dead[0].Payloads))
	j := e.get("x")
	require.Equal(t, []string{"queued@1"}, pl(j.Payloads))
	require.Equal(t, -1, j.RetryCount)
}

// Lowkiq R19: a fresh job is performed max_retry_count+1 times before its
// payload dies; with max_retry_count 0 once.
func testAttemptsBeforeMorgue(t *testing.T, h Harness) {
	for _, max := range []int{0, 1, 3} {
		t.Run(fmt.Sprint("max", max), func(t *testing.T) {
			e := newEnv(t, h, 1)
			e.enqueue(job("a", "v", 1))
			o := e.own(0)
			o.maxRetry = max
			attempts := 0
			for {
				res := o.next(1)
				require.NotNil(t, res.Batch)
				attempts++
				res = o.next(0, o.fail("a", "no", 0))
				if len(res.Dead) > 0 {
					break
				}
				require.Less(t, attempts, 10)
			}
			require.Equal(t, max+1, attempts)
			require.Nil(t, e.get("a"))
		})
	}
}

// docs/contract.md §3.6: failing some ids of a batch acknowledges the others;
// ids not in the batch are ignored.
func testPartialFailure(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	o := e.own(0)
	require.Len(t, o.next(3).Batch.Jobs, 3)
	res := o.next(0, o.fail("b", "bad b", time.Minute), o.fail("not-in-batch", "?", 0))
	require.Equal(t, 2, res.Processed)
	require.Equal(t, 1, res.Failed)
	require.Nil(t, e.get("a"))
	require.Nil(t, e.get("c"))
	require.Nil(t, e.get("not-in-batch"))
	j := e.get("b")
	require.Equal(t, 0, j.RetryCount)
	require.Equal(t, "bad b", j.Error)
}

// docs/contract.md §3.5: what a settlement moved to the morgue is reported
// again when the Advance is retried after its reply was lost, so that the
// retries_exhausted hook sees it at least once; the next call confirms it.
func testDeadListOnRetriedAdvance(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "va", 1), job("b", "vb", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 2, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 2)

	// Settle only, failing a: retried, the report is the same.
	e.enqueue(job("c", "vc", 1))
	settle := persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "a", Error: "dead a"}}}
	for attempt := range 2 {
		res, err = e.s.Advance(e.ctx, l, settle)
		require.NoError(t, err)
		require.Len(t, res.Dead, 1, "attempt %d", attempt)
		require.Equal(t, "a", res.Dead[0].ID)
		require.Equal(t, []string{"va"}, payloadData(res.Dead[0].Payloads))
		require.Equal(t, "dead a", res.Dead[0].Error)
		require.Equal(t, 1, res.Processed)
		require.Equal(t, 1, res.Failed)
	}
	// Settle and fetch in one call: the batch and the report come back.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 3, Fetch: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Empty(t, res.Dead, "a new call confirmed the last report")
	require.Equal(t, []string{"c"}, ids(res.Batch))
	e.enqueue(job("d", "vd", 1))
	req := persistence.AdvanceRequest{Settle: 3, NextSeq: 4, Fetch: 1, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "c", Error: "dead c"}}}
	for attempt := range 2 {
		res, err = e.s.Advance(e.ctx, l, req)
		require.NoError(t, err)
		require.Equal(t, []string{"d"}, ids(res.Batch), "attempt %d", attempt)
		require.Len(t, res.Dead, 1, "attempt %d", attempt)
		require.Equal(t, "c", res.Dead[0].ID)
	}
	st := e.stats()
	require.EqualValues(t, 2, st.MorgueLength)
	require.EqualValues(t, 2, st.Failed, "nothing settled twice")
}

// docs/contract.md §3.5: the retries_exhausted hook sees what went to the
// morgue at least once, even when the owner that moved it never received the
// reply and then lost its lease: the next owner's first Advance reports it
// (again on a retry of that call), and a later call confirms it.
func testDeadListHandedToNextOwner(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "va", 1), job("b", "vb", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	la, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", 300*time.Millisecond)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, la, persistence.AdvanceRequest{NextSeq: 1, Fetch: 2, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 2)
	// a dies; node-a never sees the reply and never calls again.
	_, err = e.s.Advance(e.ctx, la, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "a", Error: "dead a"}}})
	require.NoError(t, err)

	var lb persistence.Lease
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		lb, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	e.enqueue(job("c", "vc", 1))
	first := persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 0}
	for attempt := range 2 {
		res, err = e.s.Advance(e.ctx, lb, first)
		require.NoError(t, err)
		require.Len(t, res.Dead, 1, "attempt %d: the previous owner's dead report", attempt)
		require.Equal(t, "a", res.Dead[0].ID)
		require.Equal(t, []string{"va"}, payloadData(res.Dead[0].Payloads))
		require.Equal(t, "dead a", res.Dead[0].Error)
		require.Equal(t, []string{"c"}, ids(res.Batch), "attempt %d", attempt)
	}
	// node-b's own failure is reported with nothing of node-a's.
	res, err = e.s.Advance(e.ctx, lb, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 1, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "c", Error: "dead c"}}})
	require.NoError(t, err)
	require.Len(t, res.Dead, 1)
	require.Equal(t, "c", res.Dead[0].ID)
	res, err = e.s.Advance(e.ctx, lb, persistence.AdvanceRequest{Settle: 2, NextSeq: 3, Fetch: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Empty(t, res.Dead, "a new call confirmed the report")
	require.NoError(t, e.s.ReleaseShard(e.ctx, lb))
	lc, _, err := e.s.AcquireShard(e.ctx, ref, "node-c", time.Minute)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, lc, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Empty(t, res.Dead, "a confirmed report is not handed over")
	require.EqualValues(t, 2, e.stats().MorgueLength)
}

// An Advance whose reply was lost can be sent again: the batch it fetched is
// returned and nothing is settled twice.
func testAdvanceIdempotent(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	o := e.own(0)
	first := o.next(1).Batch
	req := persistence.AdvanceRequest{Settle: first.Seq, Fetch: 1, NextSeq: first.Seq + 1, MaxRetryCount: 25}
	r1, err := e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	r2, err := e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Equal(t, ids(r1.Batch), ids(r2.Batch))
	require.Equal(t, []string{"b"}, ids(r2.Batch))
	require.EqualValues(t, 1, e.stats().Processed)

	// An in-flight record the owner lost track of (it restarted and settles
	// nothing) goes back to the queue and is fetched again.
	r3, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Fetch: 5, NextSeq: 100, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, 1, r3.Restored)
	require.Equal(t, []string{"b", "c"}, ids(r3.Batch))
	require.EqualValues(t, 1, e.stats().Processed)
}
