package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Enqueue defaults and the merge of payloads (docs/contract.md §3.1, §3.2).

var enqueueTests = []testCase{
	{"Rule1_EnqueueDefaults", testEnqueueDefaults, needNone},
	{"Rule2_LowkiqMergeExample", testLowkiqMergeExample, needNone},
	{"Rule2_EqualPayloadLowerScoreWins", testEqualPayloadLowerScoreWins, needNone},
	{"Rule2_NewJobKeepsQueuedTimeAndRetryCount", testNewJobKeepsQueued, needNone},
	{"Rule2_FailedJobMergesOverQueued", testFailedMergesOverQueued, needNone},
	{"Rule2_MorgueRequeueMergesOverQueued", testMorgueRequeueMerge, needAdmin},
	{"Rule2_MorgueRequeueMeetsInFlight", testMorgueRequeueMeetsInFlight, needAdmin},
	{"Rule1_UnscoredPayloadsKeepSendOrder", testSendOrder, needNone},
}

// docs/contract.md §3.1: payload = empty, score = now, perform_at = now.
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

// docs/contract.md §3.1: payloads without a score keep the order in which
// they were sent, within one call and across calls, even when the clock does
// not move between them (the README's snippet sends z-created, a-paid,
// m-shipped).
func testSendOrder(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	e.enqueue(persistence.NewJob{ID: "order", Payload: []byte("z-created")},
		persistence.NewJob{ID: "order", Payload: []byte("a-paid")},
		persistence.NewJob{ID: "other", Payload: []byte("x")},
		persistence.NewJob{ID: "order", Payload: []byte("m-shipped")})
	e.enqueue(persistence.NewJob{ID: "order", Payload: []byte("c-delivered")})
	e.enqueue(persistence.NewJob{ID: "order", Payload: []byte("b-returned")})
	e.enqueue(job("order", "0-scored-low", 1)) // an explicit score still rules
	j := e.get("order")
	require.Equal(t, []string{"0-scored-low", "z-created", "a-paid", "m-shipped", "c-delivered", "b-returned"}, payloadData(j.Payloads))
	for i := 2; i < len(j.Payloads); i++ {
		require.Less(t, j.Payloads[i-1].Score, j.Payloads[i].Score, "unscored payloads score strictly higher than the ones sent before")
	}
	require.InDelta(t, e.now(), j.Payloads[1].Score, 1e-3, "a default score is now")

	b := e.own(persistence.ShardOf("order", 2)).next(5).Batch
	require.Equal(t, payloadData(j.Payloads), payloadData(jobOf(b, "order").Payloads))
}

// docs/contract.md §3.2, the worked example: queued {v1:1, v2:2}, retry_count
// 0, perform_at T + new {v2:3, v3:4}, -1, T+2 = {v1:1, v2:2, v3:4}, 0, T.
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

// docs/contract.md §3.2: for an equal payload the lower score wins, whatever
// the arrival order, within one call or across calls (Lowkiq keeps the first
// copy).
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

// docs/contract.md §3.2 case 1: a new job merging into a queued one keeps the
// queued perform_at and retry_count (Lowkiq spec 6 and 7).
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

// docs/contract.md §3.2 case 2: a job failed while new payloads arrived; the
// failed job's perform_at, retry_count and error win, payloads unite, lower
// score wins.
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

// docs/contract.md §3.2 case 3: a morgue entry requeued over a queued job:
// perform_at now, retry_count -1, payloads united (Lowkiq spec 26 to 30).
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
	n, err := e.admin().RequeueMorgue(e.ctx, e.queue, []string{"m", "unknown"})
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
	_, err = e.admin().RequeueMorgue(e.ctx, e.queue, []string{"k"})
	require.NoError(t, err)
	require.Equal(t, []string{"v@5"}, pl(e.get("k").Payloads))
}

// docs/contract.md §3 (edge cases): a morgue requeue that meets the same id
// in flight lands as a fresh queued entry; when the in-flight batch then
// fails, the failed job's retry_count and perform_at win.
func testMorgueRequeueMeetsInFlight(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "a", job("a", "old", 1))
	e.enqueue(job("a", "cur", 2))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(1).Batch))

	_, err := e.admin().RequeueMorgue(e.ctx, e.queue, []string{"a"})
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
