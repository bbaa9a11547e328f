package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Priorities (docs/contract.md §3.16): among the due ids of a shard,
// priority 1 first, then 2, 3, 4; within an id, score order stays.

var priorityTests = []testCase{
	{"Rule16_PriorityOrdersDueIds", testPriorityOrdersDueIds, needNone},
	{"Rule16_MoreUrgentPayloadPromotes", testPriorityPromotes, needNone},
	{"Rule16_PayloadsInScoreOrderAcrossPriorities", testPriorityScoreOrder, needNone},
	{"Rule16_FailureAndRestoreKeepPriority", testPriorityFailureRestore, needNone},
	{"Rule16_BoundedFetchKeepsPriority", testPriorityBoundedFetch, needNone},
	{"Rule16_ListingIncludesPriorityIds", testPriorityListing, needNone},
	{"Rule16_ActionsSeePriorityIds", testPriorityActions, needAdmin},
	{"Rule16_PerformAllNowAcrossCalls", testPriorityPerformAllNowChunks, needAdmin},
	{"Rule16_PollReportsDuePriorityWork", testPriorityPoll, needNone},
	{"Rule16_BadPriorityRefused", testPriorityRefused, needNone},
}

// pjob is a job with a score and a priority.
func pjob(id, payload string, sc float64, pri int) persistence.NewJob {
	j := job(id, payload, sc)
	j.Priority = pri
	return j
}

// docs/contract.md §3.16: a due id of priority 1 comes before due ids of
// priority 2 to 4 enqueued earlier (each priority by perform_at); a
// priority never makes an id due before its perform_at.
func testPriorityOrdersDueIds(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(pjob("c", "c", 1, 3))
	e.clock.Advance(time.Second)
	e.enqueue(pjob("b2", "b", 1, 2))
	e.clock.Advance(time.Second)
	e.enqueue(pjob("b1", "b", 1, 2))
	late := pjob("late", "l", 1, 2)
	late.PerformAt = e.at(time.Minute)
	e.enqueue(late)
	e.clock.Advance(time.Second)
	e.enqueue(job("a", "a", 1), pjob("d", "d", 1, 4))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(1).Batch))
	res := o.next(10)
	require.Equal(t, []string{"b2", "b1", "c", "d"}, ids(res.Batch))
	require.Equal(t, 2, jobOf(res.Batch, "b1").Priority)
	require.Equal(t, 4, jobOf(res.Batch, "d").Priority)
	require.Nil(t, o.next(10).Batch, "a priority makes nothing due")
	require.Equal(t, 2, e.get("late").Priority)
	e.clock.Advance(time.Minute)
	require.Equal(t, []string{"late"}, ids(o.next(10).Batch))
}

// docs/contract.md §3.16: an id takes the most urgent priority of the
// payloads merged into it; a less urgent payload does not demote it.
func testPriorityPromotes(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(pjob("x", "x1", 1, 3), pjob("y", "y1", 1, 2))
	e.enqueue(job("z", "z1", 1))
	e.clock.Advance(time.Second)
	e.enqueue(pjob("x", "x2", 2, 1), pjob("z", "z2", 2, 4), pjob("y", "y2", 2, 3))
	require.Equal(t, 0, e.get("x").Priority, "promoted to 1")
	require.Equal(t, 2, e.get("y").Priority, "not demoted")
	require.Equal(t, 0, e.get("z").Priority, "not demoted")
	o := e.own(0)
	res := o.next(10)
	require.Equal(t, []string{"x", "z", "y"}, ids(res.Batch))
	require.Equal(t, []string{"x1", "x2"}, payloadData(jobOf(res.Batch, "x").Payloads))
	// A priority 4 id promoted to 2 comes before a priority 3 one.
	o.next(0)
	e.enqueue(pjob("p", "p1", 1, 4), pjob("q", "q1", 1, 3))
	e.enqueue(pjob("p", "p2", 2, 2))
	require.Equal(t, []string{"p", "q"}, ids(o.next(10).Batch))
}

// docs/contract.md §3.16: the payloads of one id come in score order
// whatever their priorities.
func testPriorityScoreOrder(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(pjob("a", "urgent-late", 5, 1), pjob("a", "lazy-early", 1, 4), pjob("a", "mid", 3, 2))
	res := e.own(0).next(10)
	require.Equal(t, []string{"lazy-early@1", "mid@3", "urgent-late@5"}, pl(jobOf(res.Batch, "a").Payloads))
	require.Equal(t, 0, jobOf(res.Batch, "a").Priority)
}

// docs/contract.md §3.16: an id put back after a failure or by a restore
// keeps its priority.
func testPriorityFailureRestore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(pjob("b", "b1", 1, 2))
	o := e.own(0)
	require.Equal(t, []string{"b"}, ids(o.next(1).Batch))
	o.next(0, o.fail("b", "boom", 0))
	e.clock.Advance(time.Second)
	e.enqueue(job("a", "a1", 1))
	require.Equal(t, 2, e.get("b").Priority)
	res := o.next(10)
	require.Equal(t, []string{"a", "b"}, ids(res.Batch), "the retried id keeps priority 2")
	require.Equal(t, 2, jobOf(res.Batch, "b").Priority)
	// A restore: the batch goes back as it was, b with priority 2.
	e.enqueue(job("c", "c1", 1))
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	require.Equal(t, 2, e.get("b").Priority)
	o = e.own(0)
	require.Equal(t, []string{"a", "c", "b"}, ids(o.next(10).Batch))
	// Retries exhausted: the lowest payload dies, the rest goes back as a
	// fresh job with the id's priority.
	o.next(0)
	e.enqueue(pjob("m", "m1", 1, 3), pjob("m", "m2", 2, 3))
	o.maxRetry = 0
	require.Equal(t, []string{"m"}, ids(o.next(10).Batch))
	o.next(0, o.fail("m", "dead", 0))
	left := e.get("m")
	require.Equal(t, []string{"m2"}, payloadData(left.Payloads))
	require.Equal(t, 3, left.Priority)
}

// docs/contract.md §3.16 and §2.6: what a bounded fetch leaves of an id
// stays queued with the id's priority.
func testPriorityBoundedFetch(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(pjob("w", "w1", 1, 3), pjob("w", "w2", 2, 3), pjob("w", "w3", 3, 3))
	o := e.own(0)
	res, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, MaxRetryCount: 25, MaxPayloads: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"w1", "w2"}, payloadData(jobOf(res.Batch, "w").Payloads))
	left := e.get("w")
	require.NotNil(t, left)
	require.Equal(t, 3, left.Priority)
	e.enqueue(pjob("v", "v1", 1, 4))
	res, err = e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Settle: 1, Fetch: 10, NextSeq: 2, MaxRetryCount: 25, MaxPayloads: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"w", "v"}, ids(res.Batch))
	require.Equal(t, []string{"w3"}, payloadData(jobOf(res.Batch, "w").Payloads))
}

// docs/contract.md §3.16 and §3.8: the listing by perform_at holds the ids
// of every priority, in perform_at order, across pages.
func testPriorityListing(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	var jobs []persistence.NewJob
	want := []string{}
	for i, pri := range []int{1, 2, 1, 4, 3, 1, 2, 2} {
		id := string(rune('a' + i))
		j := pjob(id, id, 1, pri)
		j.PerformAt = e.at(time.Duration(i-4) * time.Minute)
		jobs = append(jobs, j)
		want = append(want, id)
	}
	e.enqueue(jobs...)
	for _, rev := range []bool{false, true} {
		var got []string
		cursor := ""
		for {
			page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt, Rev: rev, Limit: 3, Cursor: cursor})
			require.NoError(t, err)
			for _, j := range page.Jobs {
				got = append(got, j.ID)
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		exp := append([]string(nil), want...)
		if rev {
			for i, k := 0, len(exp)-1; i < k; i, k = i+1, k-1 {
				exp[i], exp[k] = exp[k], exp[i]
			}
		}
		require.Equal(t, exp, got, "rev=%v", rev)
	}
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 2, page.Jobs[1].Priority)
	st := e.stats()
	require.Equal(t, int64(8), st.Length)
	require.InDelta(t, 240, st.Lag, 0.001, "lag counts ids of every priority")
}

// docs/contract.md §3.16 and §3.9: queue actions see the ids of every
// priority; perform all now keeps their priority.
func testPriorityActions(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	var jobs []persistence.NewJob
	for i, pri := range []int{1, 2, 3, 4} {
		j := pjob(string(rune('a'+i)), "v", 1, pri)
		j.PerformAt = e.at(time.Duration(i+1) * time.Minute)
		jobs = append(jobs, j)
	}
	e.enqueue(jobs...)
	n, err := e.admin().PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, 3, e.get("c").Priority)
	require.True(t, e.get("c").PerformAt.Equal(e.clock.Now()))
	ok, err := e.admin().DeleteJob(e.ctx, e.queue, "b")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = e.admin().CancelJob(e.ctx, e.queue, "d", persistence.CancelDelete)
	require.NoError(t, err)
	require.Nil(t, e.get("d"))
	o := e.own(0)
	require.Equal(t, []string{"a", "c"}, ids(o.next(10).Batch))
	o.next(0, o.fail("c", "boom", time.Hour))
	n, err = e.admin().KillFailed(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Nil(t, e.get("c"))
	require.Nil(t, o.next(10).Batch, "nothing left in any priority")
	require.Equal(t, int64(0), e.stats().Length)
}

// docs/contract.md §3.16: the idle poll reports a shard whose only work
// is a due id of priority 2 to 4, not one that is not due yet.
func testPriorityPoll(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	e.enqueue(pjob(e.idOn(0, "due"), "v", 1, 3))
	j := pjob(e.idOn(1, "later"), "v", 1, 2)
	j.PerformAt = e.at(time.Minute)
	e.enqueue(j)
	require.Equal(t, []int{0}, e.polled(0, 1))
	e.clock.Advance(time.Minute)
	require.Equal(t, []int{0, 1}, e.polled(0, 1))
}

// docs/contract.md §3.16: a priority outside 0 (the default) to 4 is
// refused with a field error, and nothing is written.
func testPriorityRefused(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	for _, p := range []int{-1, 5} {
		err := e.s.Enqueue(e.ctx, e.queue, []persistence.NewJob{job("a", "v", 1), pjob("b", "v", 1, p)})
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "priority", fe.Field)
		require.ErrorIs(t, err, persistence.ErrInvalid)
	}
	require.Nil(t, e.get("a"))
}

// docs/contract.md §3.16 and §3.9: perform all now reaches every delayed id
// of every priority when they take several bounded calls per shard.
func testPriorityPerformAllNowChunks(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	var jobs []persistence.NewJob
	for i := range 1300 {
		j := pjob(fmt.Sprint("j", i), "v", 1, 1+i%4)
		j.PerformAt = e.at(time.Duration(i+1) * time.Second)
		jobs = append(jobs, j)
	}
	e.enqueue(jobs...)
	n, err := e.admin().PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1300, n)
	require.Equal(t, 4, e.get("j1299").Priority)
	require.True(t, e.get("j1299").PerformAt.Equal(e.clock.Now()))
	require.InDelta(t, 0, e.stats().Lag, 0.001)
	res := e.own(0).next(1000)
	require.Len(t, res.Batch.Jobs, 1000)
	require.Equal(t, "j0", res.Batch.Jobs[0].ID)
	require.Equal(t, 0, res.Batch.Jobs[324].Priority)
	require.Equal(t, 2, res.Batch.Jobs[325].Priority)
}
