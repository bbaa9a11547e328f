package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Outcomes chosen by the handler: snooze, dead now, discard
// (docs/contract.md §3.11).

var outcomeTests = []testCase{
	{"Rule11_SnoozeKeepsRetryCountAndError", testSnooze, needNone},
	{"Rule11_DeadNowGoesToTheMorgue", testDeadNow, needNone},
	{"Rule11_DiscardDropsAndCounts", testDiscard, needNone},
	{"Rule11_OutcomesKeepQueuedOrder", testOutcomesKeepOrder, needNone},
	{"Rule11_OutcomesMixedInOneSettle", testOutcomesMixed, needNone},
	{"Rule11_RetriedAdvanceIsIdempotent", testOutcomesIdempotent, needNone},
	{"Rule11_StatefulOutcomesCommitNothing", testOutcomesStateful, needNone},
}

// settleWith settles the owner's batch with req's outcomes and fetches n.
func (o *owner) settleWith(n int, req persistence.AdvanceRequest) persistence.AdvanceResult {
	o.e.t.Helper()
	if o.cur != nil {
		req.Settle = o.cur.Seq
	}
	o.seq++
	req.Fetch, req.NextSeq, req.MaxRetryCount = n, o.seq, o.maxRetry
	res, err := o.e.s.Advance(o.e.ctx, o.lease, req)
	require.NoError(o.e.t, err)
	o.cur = res.Batch
	return res
}

// §3.11: a snoozed id goes back due at its time with its retry count and
// last error unchanged; it is neither processed nor failed, and counted.
func testSnooze(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1))
	o := e.own(0)
	o.maxRetry = 5
	o.next(1)
	o.next(1, o.fail("a", "first", 0)) // retry count 0, fetched again
	require.NotNil(t, o.cur)
	res := o.settleWith(1, persistence.AdvanceRequest{Snoozes: []persistence.Snooze{{ID: "a", RetryAt: e.at(time.Minute)}}})
	require.Nil(t, res.Batch, "a snoozed id is not due before its time")
	require.Equal(t, 1, res.Snoozed)
	require.Equal(t, 0, res.Processed+res.Failed)
	require.True(t, res.NextDue.Equal(e.at(time.Minute)), "next due %v", res.NextDue)
	j := e.get("a")
	require.Equal(t, 0, j.RetryCount)
	require.Equal(t, "first", j.Error)
	require.Equal(t, []string{"v@1"}, pl(j.Payloads))
	require.True(t, j.PerformAt.Equal(e.at(time.Minute)))
	st := e.stats()
	require.EqualValues(t, 1, st.Snoozed)
	require.EqualValues(t, 1, st.Failed)
	require.EqualValues(t, 0, st.Processed)

	e.clock.Advance(time.Minute)
	b := o.next(1).Batch
	require.Equal(t, []string{"a"}, ids(b))
	require.Equal(t, 0, b.Jobs[0].RetryCount)
}

// §3.11: dead now moves every payload the handler was given to the morgue
// with the reason, after no retry at all, and reports it in Dead.
func testDeadNow(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v1", 1), job("a", "v2", 2))
	o := e.own(0)
	o.maxRetry = 25
	o.next(1)
	res := o.settleWith(0, persistence.AdvanceRequest{Deaths: []persistence.Death{{ID: "a", Reason: "poison"}}})
	require.Len(t, res.Dead, 1)
	require.Equal(t, "a", res.Dead[0].ID)
	require.Equal(t, "poison", res.Dead[0].Error)
	require.Equal(t, 0, res.Dead[0].RetryCount)
	require.Equal(t, []string{"v1@1", "v2@2"}, pl(res.Dead[0].Payloads))
	require.Equal(t, 1, res.Failed)
	require.Nil(t, e.get("a"))
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "poison", page.Entries[0].Error)
	require.Equal(t, []string{"v1@1", "v2@2"}, pl(page.Entries[0].Payloads))
	require.EqualValues(t, 1, e.stats().MorgueLength)
}

// §3.11: a discarded id's payloads are removed, counted, never delivered
// again.
func testDiscard(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	o := e.own(0)
	require.Len(t, o.next(2).Batch.Jobs, 2)
	res := o.settleWith(5, persistence.AdvanceRequest{Discards: []persistence.Discard{{ID: "a", Reason: "stale"}}})
	require.Nil(t, res.Batch)
	require.Equal(t, 1, res.Discarded)
	require.Equal(t, 1, res.Processed)
	require.Empty(t, res.Dead)
	require.Nil(t, e.get("a"))
	st := e.stats()
	require.EqualValues(t, 1, st.Discarded)
	require.EqualValues(t, 0, st.MorgueLength)
	require.EqualValues(t, 0, st.Failed)
	require.EqualValues(t, 0, st.Length)
}

// §3.11 and §2.2: what was queued for an id while it was in flight stays
// queued in order behind a snooze; after a death or a discard it is handed
// over next, on its own.
func testOutcomesKeepOrder(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("s", "s1", 1), job("d", "d1", 1), job("x", "x1", 1))
	o := e.own(0)
	require.Len(t, o.next(3).Batch.Jobs, 3)
	e.enqueue(job("s", "s2", 2), job("d", "d2", 2), job("x", "x2", 2))
	res := o.settleWith(0, persistence.AdvanceRequest{
		Snoozes:  []persistence.Snooze{{ID: "s", RetryAt: e.at(time.Second)}},
		Deaths:   []persistence.Death{{ID: "d", Reason: "dead"}},
		Discards: []persistence.Discard{{ID: "x", Reason: "gone"}},
	})
	require.Equal(t, []string{"d1@1"}, pl(res.Dead[0].Payloads))
	require.Equal(t, []string{"s1@1", "s2@2"}, pl(e.get("s").Payloads))
	require.Equal(t, []string{"d2@2"}, pl(e.get("d").Payloads))
	require.Equal(t, []string{"x2@2"}, pl(e.get("x").Payloads))
	e.clock.Advance(time.Second)
	b := o.next(5).Batch
	require.ElementsMatch(t, []string{"s", "d", "x"}, ids(b))
	require.Equal(t, []string{"s1@1", "s2@2"}, pl(jobOf(b, "s").Payloads))
}

// §3.11 and §3.6: one settle mixes every outcome with failures and
// successes.
func testOutcomesMixed(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("ok", "v", 1), job("f", "v", 1), job("s", "v", 1), job("d", "v", 1), job("x", "v", 1))
	o := e.own(0)
	o.maxRetry = 5
	require.Len(t, o.next(5).Batch.Jobs, 5)
	res := o.settleWith(0, persistence.AdvanceRequest{
		Failures: []persistence.Failure{o.fail("f", "boom", time.Hour)},
		Snoozes:  []persistence.Snooze{{ID: "s", RetryAt: e.at(time.Hour)}},
		Deaths:   []persistence.Death{{ID: "d", Reason: "dead"}},
		Discards: []persistence.Discard{{ID: "x", Reason: "gone"}},
	})
	require.Equal(t, 1, res.Processed)
	require.Equal(t, 2, res.Failed)
	require.Equal(t, 1, res.Snoozed)
	require.Equal(t, 1, res.Discarded)
	require.Len(t, res.Dead, 1)
	require.Nil(t, e.get("ok"))
	require.Equal(t, 0, e.get("f").RetryCount)
	require.Equal(t, -1, e.get("s").RetryCount)
	require.Nil(t, e.get("d"))
	require.Nil(t, e.get("x"))
}

// §3.11: an Advance retried after its reply was lost changes nothing more
// and reports the same dead payloads.
func testOutcomesIdempotent(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("s", "v", 1), job("d", "v", 1), job("x", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 3, MaxRetryCount: 5})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 3)
	settle := persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 5, Fetch: 3,
		Snoozes:  []persistence.Snooze{{ID: "s", RetryAt: e.at(time.Hour)}},
		Deaths:   []persistence.Death{{ID: "d", Reason: "dead"}},
		Discards: []persistence.Discard{{ID: "x", Reason: "gone"}}}
	first, err := e.s.Advance(e.ctx, l, settle)
	require.NoError(t, err)
	require.Len(t, first.Dead, 1)
	again, err := e.s.Advance(e.ctx, l, settle)
	require.NoError(t, err)
	require.Len(t, again.Dead, 1, "the dead report is repeated until confirmed")
	require.Equal(t, first.Dead[0].ID, again.Dead[0].ID)
	st := e.stats()
	require.EqualValues(t, 1, st.Snoozed)
	require.EqualValues(t, 1, st.Discarded)
	require.EqualValues(t, 1, st.Failed)
	require.EqualValues(t, 1, st.MorgueLength)
	require.EqualValues(t, 1, st.Length)
	j := e.get("s")
	require.Equal(t, []string{"v@1"}, pl(j.Payloads))
	require.True(t, j.PerformAt.Equal(e.at(time.Hour)))
	// The next call confirms the report.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 2, NextSeq: 3})
	require.NoError(t, err)
	require.Empty(t, res.Dead)
}

// §3.11 and §11: nothing of the call commits for a snoozed, dead or
// discarded id (state writes, emits); a snoozed id's timer fires again at
// its time, a dead or discarded id's timer firing is dropped.
func testOutcomesStateful(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	o := e.own(0)
	o.timers(0, nil)
	tws := []persistence.TimerWrite{{ID: "s", At: e.clock.Now()}, {ID: "d", At: e.clock.Now()}, {ID: "x", At: e.clock.Now()}}
	e.enqueue(job("s", "v", 1), job("d", "v", 1), job("x", "v", 1))
	o.timers(3, nil)
	o.timers(0, tws) // acknowledges s, d and x, and sets their timers
	res := o.timers(3, nil)
	require.Len(t, res.Batch.Jobs, 3, "the timers bring the ids")
	res = o.settleWith(0, persistence.AdvanceRequest{Stateful: true,
		StateWrites: []persistence.StateWrite{{ID: "s", Data: []byte("S")}, {ID: "d", Data: []byte("D")}, {ID: "x", Data: []byte("X")}},
		Emits:       []persistence.Emit{{From: "s", Queue: e.queue, Job: persistence.NewJob{ID: "emitted", Payload: []byte("e")}}},
		Snoozes:     []persistence.Snooze{{ID: "s", RetryAt: e.at(time.Minute)}},
		Deaths:      []persistence.Death{{ID: "d", Reason: "dead"}},
		Discards:    []persistence.Discard{{ID: "x", Reason: "gone"}},
	})
	require.Empty(t, res.Dead, "a job only its timer brought has no payload to bury")
	require.Zero(t, res.Outbox, "the snoozed id's emit is dropped")
	for _, id := range []string{"s", "d", "x"} {
		info, err := e.s.GetJob(e.ctx, e.queue, id)
		if err == nil {
			require.Nil(t, info.State, "no state committed for %s", id)
			if id == "s" {
				require.True(t, info.Timer.Equal(e.at(time.Minute)), "the snoozed id's timer is back at its time: %v", info.Timer)
			} else {
				require.True(t, info.Timer.IsZero(), "the timer of %s is dropped", id)
			}
		} else {
			require.NotEqual(t, "s", id)
			require.ErrorIs(t, err, persistence.ErrNotFound)
		}
	}
}
