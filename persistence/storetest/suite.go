package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Run runs the whole conformance suite against the harness. Tests run in
// parallel, each on its own namespace.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"Rule1_EnqueueDefaults", testEnqueueDefaults},
		{"Rule2_LowkiqMergeExample", testLowkiqMergeExample},
		{"Rule2_EqualPayloadLowerScoreWins", testEqualPayloadLowerScoreWins},
		{"Rule2_NewJobKeepsQueuedTimeAndRetryCount", testNewJobKeepsQueued},
		{"Rule2_FailedJobMergesOverQueued", testFailedMergesOverQueued},
		{"Rule2_MorgueRequeueMergesOverQueued", testMorgueRequeueMerge},
		{"Rule2_MorgueRequeueMeetsInFlight", testMorgueRequeueMeetsInFlight},
		{"Rule3_FetchDueInPerformAtOrder", testFetchOrder},
		{"Rule3_FetchInBatches", testFetchInBatches},
		{"Rule3_InFlightIDQueuesUp", testInFlightIDQueuesUp},
		{"Rule4_SuccessAcknowledges", testSuccess},
		{"Rule5_FailureRetries", testFailureRetries},
		{"Rule5_MorgueTakesLowestScoredPayloadOnly", testMorgueLowestOnly},
		{"Rule5_MorgueTakesWhatTheHandlerWasGiven", testMorgueWhatHandlerGot},
		{"Rule5_AttemptsBeforeMorgue", testAttemptsBeforeMorgue},
		{"Rule6_PartialFailure", testPartialFailure},
		{"Rule7_CrashRestore", testCrashRestore},
		{"Rule7_SkippedIdsGoBackUntouched", testSkipped},
		{"Rule8_MorgueListings", testMorgueListings},
		{"Rule8_MorgueMergeKeepsLowerScore", testMorgueMerge},
		{"Rule8_MorgueRequeueAndDelete", testMorgueRequeueDelete},
		{"Rule8_MorgueRetention", testMorgueRetention},
		{"Rule9_PerformAllNow", testPerformAllNow},
		{"Rule9_KillAndDeleteFailed", testKillDeleteFailed},
		{"Rule9_DeleteJob", testDeleteJob},
		{"Rule9_PerformOneJobNow", testPerformJobNow},
		{"Rule9_KillOneJob", testKillJob},
		{"Rule9_LookUpJob", testLookUpJob},
		{"Rule10_Metrics", testMetrics},
		{"Fencing_StaleOwnerIsRefused", testFencing},
		{"Lease_RenewAndRelease", testLeaseRenewRelease},
		{"Advance_RetryIsIdempotent", testAdvanceIdempotent},
		{"Listing_Orders", testListingOrders},
		{"Listing_PagesThroughTies", testListingTies},
		{"Listing_Bounds", testListingBounds},
		{"Listing_BadOptions", testListingBadOptions},
		{"BadInput_RejectedBatchWritesNothing", testBadInput},
		{"ArbitraryBytesSurvive", testArbitraryBytes},
		{"RegisterQueue_ShardCountIsFixed", testRegisterQueue},
		{"Subscribe_NotifiesEnqueues", testSubscribe},
		{"Subscribe_NotifiesControls", testSubscribeControls},
		{"Rule1_UnscoredPayloadsKeepSendOrder", testSendOrder},
		{"Rule3_DueChecksUseTheStoresTime", testDueChecksUseStoreTime},
		{"Rule5_DeadListReturnedOnRetriedAdvance", testDeadListOnRetriedAdvance},
		{"Rule5_DeadListHandedToTheNextOwner", testDeadListHandedToNextOwner},
		{"Guarantee5_EpochsGrowAfterLostWrites", testEpochsGrowAfterLostWrites},
		{"Guarantee5_TokensNeverReissued", testTokensNeverReissued},
		{"Guarantee6_PayloadsPerCallCappedInOrder", testPayloadsPerCallCapped},
		{"Guarantee6_HotIDDrainsInBoundedCalls", testHotIDBounded},
		{"Deadline_KeptAndHonouredOnRestore", testDeadlineKeptOnRestore},
		{"Deadline_BoundCountsAtMostMaxCalls", testDeadlineMaxCalls},
		{"Lease_RenewShardsTogether", testRenewShards},
		{"Upgrade_Layout1DataServedAndDrained", testUpgrade},
		{"Model_RandomOperations", testModel},
		{"Identity_StoreIDIsStable", testStoreID},
		{"Controls_PauseKeptAndShown", testPauseKept},
		{"Controls_PermitsBoundedAndExpire", testPermits},
		{"Controls_TokenBucket", testTokenBucket},
		{"Controls_PeriodicTickMovesOnce", testTicks},
		{"Controls_PeriodicTickEnqueuedOnce", testEnqueueTick},
	}
	tests = append(tests, stateTests...)
	tests = append(tests, timerTests...)
	tests = append(tests, headerTests...)
	tests = append(tests, outboxTests...)
	tests = append(tests, feedTests...)
	tests = append(tests, pollTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// SPEC 3.1: payload = empty, score = now, perform_at = now.
func testEnqueueDefaults(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(persistence.NewJob{ID: "a"})
	j := e.get("a")
	require.NotNil(t, j)
	require.Equal(t, []string{"@" + trimFloat(e.now())}, pl(j.Payloads))
	require.True(t, j.PerformAt.Equal(epoch), "perform_at %v", j.PerformAt)
	require.Equal(t, -1, j.RetryCount)
	require.Empty(t, j.Error)

	b := e.own(0).next(1).Batch
	require.Equal(t, []string{"a"}, ids(b))
	require.Empty(t, b.Jobs[0].Payloads[0].Data)
}

// SPEC 3.2, the worked example: queued {v1:1, v2:2}, retry_count 0,
// perform_at T + new {v2:3, v3:4}, -1, T+2 = {v1:1, v2:2, v3:4}, 0, T.
func testLowkiqMergeExample(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("1", "v1", 1), job("1", "v2", 2))
	o := e.own(0)
	require.Equal(t, []string{"1"}, ids(o.next(1).Batch))
	o.next(0, o.fail("1", "boom", 0)) // queued again: retry_count 0, perform_at T

	n := job("1", "v2", 3)
	n.PerformAt = e.at(2 * time.Second)
	m := job("1", "v3", 4)
	m.PerformAt = e.at(2 * time.Second)
	e.enqueue(n, m)

	j := e.get("1")
	require.Equal(t, []string{"v1@1", "v2@2", "v3@4"}, pl(j.Payloads))
	require.Equal(t, 0, j.RetryCount)
	require.True(t, j.PerformAt.Equal(epoch))
	require.Equal(t, "boom", j.Error)
}

// SPEC 3.2: for an equal payload the lower score wins, whatever the arrival
// order, within one call or across calls (Lowkiq keeps the first copy).
func testEqualPayloadLowerScoreWins(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 10), job("a", "v", 5)) // one call, lower second
	e.enqueue(job("b", "v", 5), job("b", "v", 10)) // one call, lower first
	e.enqueue(job("c", "v", 10))
	e.enqueue(job("c", "v", 5)) // across calls, lower later
	e.enqueue(job("d", "v", 5))
	e.enqueue(job("d", "v", 10)) // across calls, higher later
	for _, id := range []string{"a", "b", "c", "d"} {
		require.Equal(t, []string{"v@5"}, pl(e.get(id).Payloads), id)
	}
	// Payloads are listed by score whatever the enqueue order (Lowkiq spec 5).
	e.enqueue(job("e", "v2", 20), job("e", "v1", 10))
	require.Equal(t, []string{"v1@10", "v2@20"}, pl(e.get("e").Payloads))
}

// SPEC 3.2 case 1: a new job merging into a queued one keeps the queued
// perform_at and retry_count (Lowkiq spec 6 and 7).
func testNewJobKeepsQueued(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v1", 1))
	later := job("a", "v2", 2)
	later.PerformAt = e.at(10 * time.Second)
	e.enqueue(later)
	j := e.get("a")
	require.True(t, j.PerformAt.Equal(epoch))
	require.Equal(t, -1, j.RetryCount)

	// An earlier perform_at does not win either: the queued job's is kept.
	e.enqueue(job("b", "v1", 1))
	o := e.own(0)
	require.ElementsMatch(t, []string{"a", "b"}, ids(o.next(2).Batch))
	o.next(0, o.fail("b", "x", 30*time.Second))
	early := job("b", "v3", 3)
	early.PerformAt = e.at(-time.Hour)
	e.enqueue(early)
	j = e.get("b")
	require.Equal(t, 0, j.RetryCount)
	require.True(t, j.PerformAt.Equal(e.at(30*time.Second)))
	require.Equal(t, "x", j.Error)
}

// SPEC 3.2 case 2: a job failed while new payloads arrived; the failed job's
// perform_at, retry_count and error win, payloads unite, lower score wins.
func testFailedMergesOverQueued(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "x", 1), job("a", "y", 2))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(1).Batch))

	newer := []persistence.NewJob{job("a", "x", 50), job("a", "z", 60)}
	newer[0].PerformAt = e.at(time.Hour)
	newer[1].PerformAt = e.at(time.Hour)
	e.enqueue(newer...)
	o.next(0, o.fail("a", "boom", 30*time.Second))

	j := e.get("a")
	require.Equal(t, []string{"x@1", "y@2", "z@60"}, pl(j.Payloads))
	require.Equal(t, 0, j.RetryCount)
	require.True(t, j.PerformAt.Equal(e.at(30*time.Second)))
	require.Equal(t, "boom", j.Error)
	st := e.stats()
	require.EqualValues(t, 1, st.Failed)
	require.EqualValues(t, 0, st.Processed)
}

// toMorgue sends id (with the given payloads) straight to the morgue.
func toMorgue(e *env, id string, jobs ...persistence.NewJob) {
	e.t.Helper()
	e.enqueue(jobs...)
	o := e.own(persistence.ShardOf(id, e.shards))
	o.maxRetry = 0
	for {
		res := o.next(1)
		require.NotNil(e.t, res.Batch, "id %s never fetched", id)
		if res.Batch.Jobs[0].ID == id {
			break
		}
	}
	res := o.next(0, o.fail(id, "dead: "+id, 0))
	require.Len(e.t, res.Dead, 1)
	require.NoError(e.t, e.s.ReleaseShard(e.ctx, o.lease))
}

// SPEC 3.2 case 3: a morgue entry requeued over a queued job: perform_at now,
// retry_count -1, payloads united (Lowkiq spec 26 to 30).
func testMorgueRequeueMerge(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "m", job("m", "p1", 1))

	e.enqueue(job("m", "p2", 2))
	o := e.own(0)
	require.Equal(t, []string{"m"}, ids(o.next(1).Batch))
	o.next(0, o.fail("m", "again", 100*time.Second))
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	require.Equal(t, 0, e.get("m").RetryCount)

	e.clock.Advance(5 * time.Second)
	n, err := e.s.RequeueMorgue(e.ctx, e.queue, []string{"m", "unknown"})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	j := e.get("m")
	require.Equal(t, []string{"p1@1", "p2@2"}, pl(j.Payloads))
	require.Equal(t, -1, j.RetryCount)
	require.True(t, j.PerformAt.Equal(e.clock.Now()))
	require.Empty(t, j.Error)
	require.EqualValues(t, 0, e.stats().MorgueLength)

	// Into an empty queue (Lowkiq spec 26), the same payload keeps the lower
	// score (spec 27).
	toMorgue(e, "k", job("k", "v", 5))
	e.enqueue(job("k", "v", 9))
	_, err = e.s.RequeueMorgue(e.ctx, e.queue, []string{"k"})
	require.NoError(t, err)
	require.Equal(t, []string{"v@5"}, pl(e.get("k").Payloads))
}

// SPEC 3 edge case: a morgue requeue that meets the same id in flight lands
// as a fresh queued entry; when the in-flight batch then fails, the failed
// job's retry_count and perform_at win.
func testMorgueRequeueMeetsInFlight(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "a", job("a", "old", 1))
	e.enqueue(job("a", "cur", 2))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(1).Batch))

	_, err := e.s.RequeueMorgue(e.ctx, e.queue, []string{"a"})
	require.NoError(t, err)
	j := e.get("a")
	require.Equal(t, []string{"old@1"}, pl(j.Payloads))
	require.Equal(t, -1, j.RetryCount)

	o.next(0, o.fail("a", "x", time.Minute))
	j = e.get("a")
	require.Equal(t, []string{"old@1", "cur@2"}, pl(j.Payloads))
	require.Equal(t, 0, j.RetryCount)
	require.True(t, j.PerformAt.Equal(e.at(time.Minute)))
}

// SPEC 3.3: due ids only, earliest perform_at first, ties by id.
func testFetchOrder(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	mk := func(id string, d time.Duration) persistence.NewJob {
		j := job(id, "v", 1)
		j.PerformAt = e.at(d)
		return j
	}
	e.enqueue(mk("d", 10*time.Second), mk("b", -10*time.Second), mk("a", -10*time.Second), mk("c", -30*time.Second), mk("e", time.Hour))
	o := e.own(0)
	res := o.next(10)
	require.Equal(t, []string{"c", "a", "b"}, ids(res.Batch))
	require.False(t, res.More)
	require.True(t, res.NextDue.Equal(e.at(10*time.Second)), "next due %v", res.NextDue)
	require.Equal(t, int64(0), int64(len(ids(o.next(10).Batch))))

	// A job in the future is not fetched (Lowkiq spec 3) until it is due.
	e.clock.Advance(10 * time.Second)
	require.Equal(t, []string{"d"}, ids(o.next(10).Batch))
	res = o.next(10)
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(epoch.Add(time.Hour)))
	require.EqualValues(t, 1, e.stats().Length)
}

// Lowkiq R10: batch_size 3 and 5 due ids give a, b, c then d, e.
func testFetchInBatches(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("a", "2", 2), job("b", "v", 1), job("c", "v", 1), job("d", "v", 1), job("e", "v", 1))
	o := e.own(0)
	res := o.next(3)
	require.Equal(t, []string{"a", "b", "c"}, ids(res.Batch))
	require.True(t, res.More)
	require.Equal(t, []string{"1@1", "2@2"}, pl(res.Batch.Jobs[0].Payloads))
	res = o.next(3)
	require.Equal(t, []string{"d", "e"}, ids(res.Batch))
	require.Equal(t, 3, res.Processed)
	require.False(t, res.More)
	require.True(t, res.NextDue.IsZero())
}

// SPEC 3.3: while an id is in flight, new payloads queue up and merge; they
// are handed over in a later batch.
func testInFlightIDQueuesUp(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v1", 1))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(5).Batch))
	e.enqueue(job("a", "v2", 2), job("a", "v3", 3))
	st := e.stats()
	require.EqualValues(t, 1, st.Length)
	require.EqualValues(t, 1, st.Busy)
	res := o.next(5)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.Equal(t, []string{"v2@2", "v3@3"}, pl(res.Batch.Jobs[0].Payloads))
	require.Equal(t, 1, res.Processed)
}

// SPEC 3.4: success removes the in-flight record and counts the ids.
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

// SPEC 3.5: a failure increments retry_count, sets perform_at to the retry
// time and records the error; the job is not fetched before it.
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

// SPEC 3.5 and Lowkiq spec 21: at max_retry_count only the lowest-scored
// payload goes to the morgue; the rest is requeued fresh, due now.
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

// SPEC 3 edge case: the payload that dies is the lowest-scored one the
// handler was given, not a lower one queued meanwhile.
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

// SPEC 3.6: failing some ids of a batch acknowledges the others; ids not in
// the batch are ignored.
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

// SPEC 3.7: a new owner restores the in-flight record of a crashed one,
// merging as "failed job + queued job" without changing retry_count, and
// without counting anything.
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

// SPEC 3.8 and Lowkiq spec 34: the morgue by id and by updated_at, both
// directions, with bounds and pages.
func testMorgueListings(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	for _, id := range []string{"m2", "m1", "m3"} {
		toMorgue(e, id, job(id, "v", 1))
		e.clock.Advance(time.Second)
	}
	list := func(opts persistence.ListOptions) []string {
		page, err := e.s.ListMorgue(e.ctx, e.queue, opts)
		require.NoError(t, err)
		var out []string
		for _, m := range page.Entries {
			out = append(out, m.ID)
		}
		return out
	}
	require.Equal(t, []string{"m1", "m2", "m3"}, list(persistence.ListOptions{Order: persistence.OrderID}))
	require.Equal(t, []string{"m3", "m2", "m1"}, list(persistence.ListOptions{Order: persistence.OrderID, Rev: true}))
	require.Equal(t, []string{"m2", "m1", "m3"}, list(persistence.ListOptions{Order: persistence.OrderUpdatedAt}))
	require.Equal(t, []string{"m3", "m1", "m2"}, list(persistence.ListOptions{Order: persistence.OrderUpdatedAt, Rev: true}))
	require.Equal(t, []string{"m2", "m3"}, list(persistence.ListOptions{Order: persistence.OrderID, Min: "m2"}))
	require.Equal(t, []string{"m1"}, list(persistence.ListOptions{Order: persistence.OrderUpdatedAt,
		Min: trimFloat(e.now() - 2), Max: trimFloat(e.now() - 1.5)}))

	var seen []string
	cursor := ""
	for {
		page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderUpdatedAt, Limit: 1, Cursor: cursor})
		require.NoError(t, err)
		for _, m := range page.Entries {
			seen = append(seen, m.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	require.Equal(t, []string{"m2", "m1", "m3"}, seen)
}

// Lowkiq spec 34: an id morgued again merges: updated_at moves, an equal
// payload keeps the lower score.
func testMorgueMerge(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "1", job("1", "v1", 10))
	e.clock.Advance(time.Second)
	toMorgue(e, "1", job("1", "v1", 20), job("1", "v0", 30))
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, []string{"v1@10"}, pl(page.Entries[0].Payloads))
	require.True(t, page.Entries[0].UpdatedAt.Equal(e.clock.Now()))
	// v0@30 survived the second morgue move and is queued.
	require.Equal(t, []string{"v0@30"}, pl(e.get("1").Payloads))
}

// SPEC 3.8: requeue and delete, given ids or all.
func testMorgueRequeueDelete(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	for i := range 12 {
		id := fmt.Sprintf("m%02d", i)
		toMorgue(e, id, job(id, "v", float64(i)))
	}
	require.EqualValues(t, 12, e.stats().MorgueLength)
	n, err := e.s.DeleteMorgue(e.ctx, e.queue, []string{"m00", "m01", "nope"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = e.s.RequeueMorgue(e.ctx, e.queue, []string{"m02"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NotNil(t, e.get("m02"))
	n, err = e.s.RequeueMorgueAll(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 9, n)
	st := e.stats()
	require.EqualValues(t, 0, st.MorgueLength)
	require.EqualValues(t, 10, st.Length)

	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		toMorgue(e, id, job(id, "v", 1))
	}
	n, err = e.s.DeleteMorgueAll(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.EqualValues(t, 0, e.stats().MorgueLength)
}

// SPEC 3.8: retention deletes entries last updated before the cut-off.
func testMorgueRetention(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "old", job("old", "v", 1))
	e.clock.Advance(48 * time.Hour)
	toMorgue(e, "new", job("new", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	n, err := e.s.TrimMorgue(e.ctx, ref, e.at(-24*time.Hour), 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "new", page.Entries[0].ID)
}

// SPEC 3.9: perform all now sets perform_at to now (not 0: lag stays true).
func testPerformAllNow(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	var jobs []persistence.NewJob
	for i := range 1200 {
		j := job(fmt.Sprint("f", i), "v", 1)
		j.PerformAt = e.at(time.Duration(i+1) * time.Minute)
		jobs = append(jobs, j)
	}
	past := job("p", "v", 1)
	past.PerformAt = e.at(-time.Minute)
	jobs = append(jobs, past)
	e.enqueue(jobs...)

	n, err := e.s.PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1200, n)
	require.True(t, e.get("f999").PerformAt.Equal(e.clock.Now()))
	require.True(t, e.get("p").PerformAt.Equal(e.at(-time.Minute)), "a job already due keeps its time")
	st := e.stats()
	require.InDelta(t, 60, st.Lag, 0.001)
	n, err = e.s.PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 0, n)
}

// SPEC 3.9 and Lowkiq spec 24, 25: kill failed moves retry_count >= 0 jobs to
// the morgue with all payloads; delete failed deletes them; fresh and
// in-flight jobs are untouched.
func testKillDeleteFailed(t *testing.T, h Harness) {
	for _, kill := range []bool{true, false} {
		t.Run(fmt.Sprint("kill=", kill), func(t *testing.T) {
			e := newEnv(t, h, 2)
			var jobs []persistence.NewJob
			for i := range 700 {
				id := fmt.Sprint("f", i)
				jobs = append(jobs, job(id, "a", 1), job(id, "b", 2))
			}
			e.enqueue(jobs...)
			for sh := range 2 {
				o := e.own(sh)
				for {
					res := o.next(100)
					if res.Batch == nil {
						break
					}
					var fails []persistence.Failure
					for _, j := range res.Batch.Jobs {
						fails = append(fails, o.fail(j.ID, "err "+j.ID, time.Hour))
					}
					o.next(0, fails...)
				}
				require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
			}
			e.enqueue(job("fresh", "v", 1), job("busy", "v", 1))
			o := e.own(persistence.ShardOf("busy", 2))
			for res := o.next(1); ids(res.Batch)[0] != "busy"; res = o.next(1) {
			}
			require.EqualValues(t, 700, e.stats().Retries)

			var n int
			var err error
			if kill {
				n, err = e.s.KillFailed(e.ctx, e.queue)
			} else {
				n, err = e.s.DeleteFailed(e.ctx, e.queue)
			}
			require.NoError(t, err)
			require.Equal(t, 700, n)
			st := e.stats()
			require.EqualValues(t, 0, st.Retries)
			require.EqualValues(t, 1, st.Busy)
			require.NotNil(t, e.get("fresh"))
			if kill {
				require.EqualValues(t, 700, st.MorgueLength)
				page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "f7", Max: "f7"})
				require.NoError(t, err)
				require.Len(t, page.Entries, 1)
				require.Equal(t, []string{"a@1", "b@2"}, pl(page.Entries[0].Payloads))
				require.Equal(t, "err f7", page.Entries[0].Error)
			} else {
				require.EqualValues(t, 0, st.MorgueLength)
			}
		})
	}
}

// SPEC 3.9: delete one job (the queued entry; an in-flight one is untouched).
func testDeleteJob(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	ok, err := e.s.DeleteJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = e.s.DeleteJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.False(t, ok)
	o := e.own(0)
	require.Equal(t, []string{"b"}, ids(o.next(5).Batch))
	ok, err = e.s.DeleteJob(e.ctx, e.queue, "b")
	require.NoError(t, err)
	require.False(t, ok)
	info, err := e.s.GetJob(e.ctx, e.queue, "b")
	require.NoError(t, err)
	require.NotNil(t, info.InFlight)
}

// docs/contract.md §3.9: perform one job now makes its queued entry due now
// with its retry count and error kept; other jobs, unknown ids and an
// in-flight batch of the id are untouched.
func testPerformJobNow(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	later := func(id string) persistence.NewJob {
		j := job(id, "v", 1)
		j.PerformAt = e.at(time.Hour)
		return j
	}
	e.enqueue(later("a"), later("b"), job("f", "v", 1))
	o := e.own(0)
	require.Equal(t, []string{"f"}, ids(o.next(1).Batch))
	o.next(0, o.fail("f", "boom", time.Hour))

	for _, id := range []string{"a", "f"} {
		ok, err := e.s.PerformJobNow(e.ctx, e.queue, id)
		require.NoError(t, err)
		require.True(t, ok, id)
		require.True(t, e.get(id).PerformAt.Equal(e.clock.Now()), id)
	}
	require.True(t, e.get("b").PerformAt.Equal(e.at(time.Hour)), "another job keeps its time")
	f := e.get("f")
	require.Equal(t, 0, f.RetryCount)
	require.Equal(t, "boom", f.Error)
	ok, err := e.s.PerformJobNow(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok, "a job already due is found and stays due")
	ok, err = e.s.PerformJobNow(e.ctx, e.queue, "nope")
	require.NoError(t, err)
	require.False(t, ok)

	res := o.next(5)
	require.ElementsMatch(t, []string{"a", "f"}, ids(res.Batch))
	ok, err = e.s.PerformJobNow(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.False(t, ok, "an id only in flight has no queued entry to change")
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.NotNil(t, info.InFlight)
	_, err = e.s.PerformJobNow(e.ctx, "nope", "a")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
}

// docs/contract.md §3.9: kill one job moves all its queued payloads to the
// morgue with its last error ("killed" when it never failed); an in-flight
// batch of the id is untouched and settles as usual.
func testKillJob(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	n := 2500
	if h.Light {
		n = 300
	}
	var jobs []persistence.NewJob
	for i := range n {
		jobs = append(jobs, job("big", fmt.Sprint("p", i), float64(i)))
	}
	e.enqueue(append(jobs, job("a", "x", 1), job("a", "y", 2), job("b", "v", 1))...)

	ok, err := e.s.KillJob(e.ctx, e.queue, "big")
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, e.get("big"))
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "big", Max: "big"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, n, max(page.Entries[0].PayloadCount, len(page.Entries[0].Payloads)))
	require.Equal(t, "killed", page.Entries[0].Error)
	require.NotNil(t, e.get("b"), "another job is untouched")

	o := e.own(0)
	for res := o.next(1); ids(res.Batch)[0] != "a"; res = o.next(1) {
	}
	e.enqueue(job("a", "z", 3))
	ok, err = e.s.KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.Equal(t, []string{"x@1", "y@2"}, pl(info.InFlight.Payloads), "the in-flight batch is untouched")
	page, err = e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "a", Max: "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"z@3"}, pl(page.Entries[0].Payloads))

	ok, err = e.s.KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.False(t, ok, "nothing queued is left to kill")
	o.next(0, o.fail("a", "boom", time.Hour))
	ok, err = e.s.KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	page, err = e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "a", Max: "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"x@1", "y@2", "z@3"}, pl(page.Entries[0].Payloads))
	require.Equal(t, "boom", page.Entries[0].Error, "a failed job keeps its last error")
	require.EqualValues(t, 0, e.stats().Retries)
	ok, err = e.s.KillJob(e.ctx, e.queue, "nope")
	require.NoError(t, err)
	require.False(t, ok)
}

// SPEC 3.9: look one job up: queued, in flight, both, or not found.
func testLookUpJob(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	_, err := e.s.GetJob(e.ctx, e.queue, "nope")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	e.enqueue(job("a", "v1", 1))
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.NotNil(t, info.Queued)
	require.Nil(t, info.InFlight)
	require.Equal(t, persistence.ShardOf("a", 2), info.Shard)

	o := e.own(info.Shard)
	o.next(1)
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.NotNil(t, info.InFlight)
	require.Equal(t, "node-a", info.InFlight.Owner)
	require.Equal(t, []string{"v1@1"}, pl(info.InFlight.Payloads))

	e.enqueue(job("a", "v2", 2))
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Equal(t, []string{"v2@2"}, pl(info.Queued.Payloads))
	require.Equal(t, []string{"v1@1"}, pl(info.InFlight.Payloads))
}

// SPEC 3.10 and Lowkiq spec 35 to 38.
func testMetrics(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	st := e.stats()
	require.Equal(t, persistence.QueueStats{Name: "q", Shards: 3, ShardLag: []float64{0, 0, 0}}, st)

	a := job("a", "v", 1)
	a.PerformAt = e.at(-10 * time.Second)
	e.enqueue(a, job("b", "v", 1))
	st = e.stats()
	require.EqualValues(t, 2, st.Length)
	require.EqualValues(t, 2, st.Fresh)
	require.InDelta(t, 10.0, st.Lag, 1e-6)
	// The lag per shard: a's shard lags 10s; a shard without a due job 0.
	require.Len(t, st.ShardLag, 3)
	require.InDelta(t, 10.0, st.ShardLag[persistence.ShardOf("a", 3)], 1e-6)
	for sh, lag := range st.ShardLag {
		if sh != persistence.ShardOf("a", 3) && sh != persistence.ShardOf("b", 3) {
			require.Zero(t, lag, "shard %d", sh)
		}
	}

	f := newEnv(t, h, 1)
	c := job("c", "v", 1)
	c.PerformAt = f.at(10 * time.Second)
	f.enqueue(c)
	require.Equal(t, 0.0, f.stats().Lag)

	g := newEnv(t, h, 1)
	g.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	o := g.own(0)
	o.next(1)
	o.next(1, o.fail("a", "x", time.Hour))
	st = g.stats()
	require.EqualValues(t, 1, st.Failed)
	require.EqualValues(t, 1, st.Busy)
	require.EqualValues(t, 2, st.Length)
	require.EqualValues(t, 1, st.Fresh)
	require.EqualValues(t, 1, st.Retries)
	o.next(0)
	st = g.stats()
	require.EqualValues(t, 1, st.Processed)
	require.EqualValues(t, 0, st.Busy)
}

// A stale owner can neither fetch, acknowledge nor fail once another owner
// took the shard over, and cannot renew or release the new owner's lease.
func testFencing(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	stale, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Second)
	require.NoError(t, err)
	_, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld)
	var held *persistence.LeaseHeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "node-a", held.Holder)
	require.Positive(t, held.TTL)
	require.LessOrEqual(t, held.TTL, time.Second)

	res, err := e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))

	var fresh persistence.Lease
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		fresh, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Greater(t, fresh.Epoch, stale.Epoch)

	_, err = e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Settle: 1, Fetch: 1, NextSeq: 2, MaxRetryCount: 25})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "ack + fetch")
	_, err = e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 25,
		Failures: []persistence.Failure{{ID: "a", Error: "x"}}})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "fail")
	_, err = e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Fetch: 5, NextSeq: 7, MaxRetryCount: 25})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "fetch")
	require.ErrorIs(t, e.s.RenewShard(e.ctx, stale, time.Minute), persistence.ErrLeaseLost)
	require.ErrorIs(t, e.s.ReleaseShard(e.ctx, stale), persistence.ErrLeaseLost)

	st := e.stats()
	require.EqualValues(t, 0, st.Processed)
	require.EqualValues(t, 0, st.Failed)
	require.EqualValues(t, 2, st.Length, "the new owner restored a")

	res, err = e.s.Advance(e.ctx, fresh, persistence.AdvanceRequest{Fetch: 5, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, ids(res.Batch))
}

// Renew extends a live lease; release restores an unsettled batch and frees
// the shard at once.
func testLeaseRenewRelease(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Second)
	require.NoError(t, err)
	require.Equal(t, "node-a", l.Owner)
	require.Positive(t, l.Epoch)
	require.NoError(t, e.s.RenewShard(e.ctx, l, time.Minute))
	h.Elapse(t, 1200*time.Millisecond)
	_, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "renewed lease still held")

	e.enqueue(job("a", "v", 1))
	_, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	owners, err := e.s.ShardOwners(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, []persistence.ShardOwner{{Shard: 0, Owner: "node-a", Epoch: l.Epoch}}, owners)
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	require.EqualValues(t, 1, e.stats().Length, "release restored the unsettled batch")
	owners, err = e.s.ShardOwners(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, []persistence.ShardOwner{{Shard: 0, Owner: "", Epoch: l.Epoch}}, owners)
	l2, restored, err := e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.NoError(t, err)
	require.Zero(t, restored)
	require.Greater(t, l2.Epoch, l.Epoch)
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

func listIDs(t *testing.T, e *env, opts persistence.ListOptions) []string {
	t.Helper()
	page, err := e.s.ListJobs(e.ctx, e.queue, opts)
	require.NoError(t, err)
	var out []string
	for _, j := range page.Jobs {
		out = append(out, j.ID)
	}
	return out
}

// Lowkiq spec 33: the six orders of the queue listing.
func testListingOrders(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	e.enqueue(job("1", "v", 1))
	o := e.own(persistence.ShardOf("1", 3))
	require.Equal(t, []string{"1"}, ids(o.next(1).Batch))
	o.next(0, o.fail("1", "x", 120*time.Second))
	two := job("2", "v", 1)
	two.PerformAt = e.at(60 * time.Second)
	e.enqueue(two)

	cases := []struct {
		order persistence.Order
		rev   bool
		want  []string
	}{
		{persistence.OrderID, false, []string{"1", "2"}},
		{persistence.OrderID, true, []string{"2", "1"}},
		{persistence.OrderPerformAt, false, []string{"2", "1"}},
		{persistence.OrderPerformAt, true, []string{"1", "2"}},
		{persistence.OrderRetryCount, false, []string{"2", "1"}},
		{persistence.OrderRetryCount, true, []string{"1", "2"}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, listIDs(t, e, persistence.ListOptions{Order: c.order, Rev: c.rev}), "%s rev=%v", c.order, c.rev)
	}
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderID})
	require.NoError(t, err)
	require.Equal(t, 0, page.Jobs[0].RetryCount)
	require.Equal(t, "x", page.Jobs[0].Error)
	require.True(t, page.Jobs[0].PerformAt.Equal(e.at(120*time.Second)))
	require.Empty(t, page.Next)
}

// Paging visits every job exactly once, in order, also through a band of
// equal scores larger than the page and while jobs leave between pages.
func testListingTies(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	var jobs []persistence.NewJob
	for i := range 250 {
		jobs = append(jobs, job(fmt.Sprintf("j%03d", i), "v", 1))
	}
	e.enqueue(jobs...) // one call: all share perform_at = now
	for _, order := range []persistence.Order{persistence.OrderPerformAt, persistence.OrderRetryCount, persistence.OrderID} {
		for _, rev := range []bool{false, true} {
			var seen []string
			cursor := ""
			for pages := 0; ; pages++ {
				require.Less(t, pages, 100)
				page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: order, Rev: rev, Limit: 7, Cursor: cursor, Payloads: 1})
				require.NoError(t, err)
				for _, j := range page.Jobs {
					seen = append(seen, j.ID)
				}
				if page.Next == "" {
					break
				}
				cursor = page.Next
			}
			require.Len(t, seen, 250, "%s rev=%v", order, rev)
			for i := range seen {
				want := fmt.Sprintf("j%03d", i)
				if rev {
					want = fmt.Sprintf("j%03d", 249-i)
				}
				require.Equal(t, want, seen[i], "%s rev=%v position %d", order, rev, i)
			}
		}
	}

	// Jobs fetched between pages (the cursor's own entry among them) do not
	// make the listing skip or repeat the others.
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 10})
	require.NoError(t, err)
	last := page.Jobs[9].ID
	o := e.own(persistence.ShardOf(last, 3))
	for {
		res := o.next(1)
		if ids(res.Batch)[0] == last {
			break
		}
	}
	rest := listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 1000, Cursor: page.Next})
	require.Len(t, rest, 240)
	for i, id := range rest {
		require.Equal(t, fmt.Sprintf("j%03d", i+10), id)
	}
}

// Bounds are inclusive, in both directions.
func testListingBounds(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	for i := range 10 {
		j := job(fmt.Sprint("k", i), "v", 1)
		j.PerformAt = e.at(time.Duration(i) * time.Second)
		e.enqueue(j)
	}
	lo, hi := trimFloat(e.now()+3), trimFloat(e.now()+6)
	require.Equal(t, []string{"k3", "k4", "k5", "k6"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Min: lo, Max: hi}))
	require.Equal(t, []string{"k6", "k5", "k4", "k3"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Min: lo, Max: hi, Rev: true}))
	require.Equal(t, []string{"k2", "k3"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderID, Min: "k2", Max: "k3"}))
	require.Equal(t, []string{"k3", "k2"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderID, Min: "k2", Max: "k3", Rev: true}))
	require.Len(t, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderRetryCount, Min: "-1", Max: "-1"}), 10)
	require.Empty(t, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderRetryCount, Min: "0"}))
	require.Equal(t, []string{"k9", "k8"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Rev: true, Limit: 2}))
}

func testListingBadOptions(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)
	cases := []struct {
		opts  persistence.ListOptions
		field string
	}{
		{persistence.ListOptions{Order: "score"}, "order"},
		{persistence.ListOptions{Order: persistence.OrderUpdatedAt}, "order"},
		{persistence.ListOptions{Limit: -1}, "limit"},
		{persistence.ListOptions{Limit: persistence.MaxListLimit + 1}, "limit"},
		{persistence.ListOptions{Order: persistence.OrderPerformAt, Min: "yesterday"}, "min"},
		{persistence.ListOptions{Order: persistence.OrderPerformAt, Max: "NaN"}, "max"},
		{persistence.ListOptions{Order: persistence.OrderPerformAt, Min: "5", Max: "1"}, "min"},
		{persistence.ListOptions{Cursor: "%%%"}, "cursor"},
		{persistence.ListOptions{Cursor: "aGVsbG8"}, "cursor"},
		{persistence.ListOptions{Cursor: page.Next, Rev: true}, "cursor"},
		{persistence.ListOptions{Cursor: page.Next, Order: persistence.OrderPerformAt}, "cursor"},
		{persistence.ListOptions{Payloads: -2}, "payloads"},
	}
	for _, c := range cases {
		_, err := e.s.ListJobs(e.ctx, e.queue, c.opts)
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe, "%+v", c.opts)
		require.Equal(t, c.field, fe.Field, "%+v", c.opts)
		require.ErrorIs(t, err, persistence.ErrInvalid)
	}
	_, err = e.s.ListJobs(e.ctx, "nope", persistence.ListOptions{})
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	_, err = e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt})
	require.ErrorAs(t, err, new(*persistence.FieldError))
}

// SPEC 7: bad input is rejected with an error naming the field, and a
// rejected batch writes nothing.
func testBadInput(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		bad   persistence.NewJob
		field string
	}{
		{"empty id", persistence.NewJob{ID: ""}, "id"},
		{"long id", persistence.NewJob{ID: strings.Repeat("x", persistence.MaxIDBytes+1)}, "id"},
		{"invalid utf-8 id", persistence.NewJob{ID: "a\xff"}, "id"},
		{"NaN score", persistence.NewJob{ID: "a", Score: &nan}, "score"},
		{"Inf score", persistence.NewJob{ID: "a", Score: &inf}, "score"},
		{"big payload", persistence.NewJob{ID: "a", Payload: make([]byte, persistence.DefaultMaxPayloadBytes+1)}, "payload"},
		{"perform_at before 1970", persistence.NewJob{ID: "a", PerformAt: time.Unix(-5, 0)}, "perform_at"},
		{"perform_at far future", persistence.NewJob{ID: "a", PerformAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, "perform_at"},
	}
	for _, c := range cases {
		err := e.s.Enqueue(e.ctx, e.queue, []persistence.NewJob{job("good", "v", 1), c.bad})
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe, c.name)
		require.Equal(t, c.field, fe.Field, c.name)
		require.Equal(t, 1, fe.Index, c.name)
		require.ErrorIs(t, err, persistence.ErrInvalid)
	}
	require.EqualValues(t, 0, e.stats().Length, "nothing of a rejected batch was written")
	require.NoError(t, e.s.Enqueue(e.ctx, e.queue, []persistence.NewJob{{ID: strings.Repeat("x", persistence.MaxIDBytes), Payload: make([]byte, persistence.DefaultMaxPayloadBytes)}}))

	err := e.s.Enqueue(e.ctx, "missing", []persistence.NewJob{job("a", "v", 1)})
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	err = e.s.Enqueue(e.ctx, "bad{name}", []persistence.NewJob{job("a", "v", 1)})
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "queue", fe.Field)
	require.NoError(t, e.s.Enqueue(e.ctx, e.queue, nil))
	_, err = e.s.GetJob(e.ctx, e.queue, "")
	require.ErrorAs(t, err, &fe)
}

// Ids and payloads with arbitrary bytes survive the store unchanged.
func testArbitraryBytes(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	idList := []string{"a:b", "{x}", "}{", "{", "}", "日本語", "nul\x00byte", "p:x", "m:y", "due", ":", "emoji 🙂", strings.Repeat("é", 256)}
	var jobs []persistence.NewJob
	for i, id := range idList {
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: append([]byte{byte(i)}, all...), Score: score(float64(i + 1))})
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte("{}:" + id), Score: score(0.1)})
	}
	e.enqueue(jobs...)
	require.EqualValues(t, len(idList), e.stats().Length)
	for i, id := range idList {
		j := e.get(id)
		require.NotNil(t, j, "%q", id)
		require.Len(t, j.Payloads, 2, "%q", id)
		require.Equal(t, []byte("{}:"+id), j.Payloads[0].Data)
		require.Equal(t, append([]byte{byte(i)}, all...), j.Payloads[1].Data)
	}
	got := map[string]bool{}
	for sh := range 4 {
		o := e.own(sh)
		for res := o.next(100); res.Batch != nil; res = o.next(100) {
			for _, j := range res.Batch.Jobs {
				require.Len(t, j.Payloads, 2)
				got[j.ID] = true
			}
		}
	}
	require.Len(t, got, len(idList))
	for _, id := range idList {
		require.True(t, got[id], "%q", id)
	}
}

func testRegisterQueue(t *testing.T, h Harness) {
	e := newEnv(t, h, 5)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 5}))
	err := e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "q", Shards: 6})
	require.ErrorIs(t, err, persistence.ErrShardCountMismatch)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 2}))
	specs, err := e.s.Queues(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []persistence.QueueSpec{{Name: "other", Shards: 2}, {Name: "q", Shards: 5}}, specs)
	var fe *persistence.FieldError
	require.ErrorAs(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "x", Shards: 0}), &fe)
	require.Equal(t, "shards", fe.Field)
	require.ErrorAs(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "", Shards: 1}), &fe)
	require.Equal(t, "queue", fe.Field)
}

func testSubscribe(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	sub, err := e.s.Subscribe(e.ctx, e.queue)
	require.NoError(t, err)
	defer sub.Close()
	e.enqueue(job("a", "v", 1))
	select {
	case ref := <-sub.C():
		require.Equal(t, persistence.ShardRef{Queue: e.queue, Shard: persistence.ShardOf("a", 4)}, ref)
	case <-time.After(5 * time.Second):
		t.Fatal("no notification within 5s")
	}
	require.NoError(t, sub.Close())
	require.NoError(t, sub.Close())
}

// A pause and a resume each send a controls notice to the queue's
// subscribers, so that every node applies them at once (docs/contract.md
// §9).
func testSubscribeControls(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	sub, err := e.s.Subscribe(e.ctx, e.queue)
	require.NoError(t, err)
	defer sub.Close()
	for _, paused := range []bool{true, false} {
		require.NoError(t, e.s.SetPaused(e.ctx, e.queue, paused))
		select {
		case ref := <-sub.C():
			require.Equal(t, persistence.ShardRef{Queue: e.queue, Shard: persistence.ControlsNotice}, ref, "paused %v", paused)
		case <-time.After(5 * time.Second):
			t.Fatalf("no controls notice within 5s (paused %v)", paused)
		}
	}
}

// A store that knows its identity (persistence.Identifier) gives the same
// one on every call, and another namespace has another one.
func testStoreID(t *testing.T, h Harness) {
	ctx := context.Background()
	a, ok := h.New(t, nil).(persistence.Identifier)
	if !ok {
		t.Skip("the store has no identity")
	}
	id, err := a.StoreID(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	for range 3 {
		again, err := a.StoreID(ctx)
		require.NoError(t, err)
		require.Equal(t, id, again)
	}
	other, err := h.New(t, nil).(persistence.Identifier).StoreID(ctx)
	require.NoError(t, err)
	require.NotEqual(t, id, other)
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
