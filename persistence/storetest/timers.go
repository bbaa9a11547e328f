package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Timers of stateful queues (docs/contract.md §11).

var timerTests = []testCase{
	{"Timer_Fires", testTimerFires, needNone},
	{"Timer_Cleared", testTimerCleared, needNone},
	{"Timer_EarlierWakeUpByPayload", testTimerEarlierWakeUp, needNone},
	{"Timer_SurvivesRestoreAndFailure", testTimerSurvivesRestore, needNone},
}

func (o *owner) timers(n int, tw []persistence.TimerWrite, failures ...persistence.Failure) persistence.AdvanceResult {
	o.e.t.Helper()
	var settle int64
	if o.cur != nil {
		settle = o.cur.Seq
	}
	o.seq++
	res, err := o.e.s.Advance(o.e.ctx, o.lease, persistence.AdvanceRequest{
		Settle: settle, Failures: failures, Fetch: n, NextSeq: o.seq, MaxRetryCount: o.maxRetry,
		Stateful: true, TimerWrites: tw,
	})
	require.NoError(o.e.t, err)
	o.cur = res.Batch
	return res
}

func timerAt(id string, at time.Time) []persistence.TimerWrite {
	return []persistence.TimerWrite{{ID: id, At: at}}
}

// §11: a timer set by the handler brings the id back at its time, with its
// state and no payload, once.
func testTimerFires(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.nextState(1, nil)
	res := o.nextState(1, []persistence.StateWrite{set("a", "s1")})
	require.Nil(t, res.Batch)
	// The timer commits with the ack of a later call.
	e.enqueue(job("a", "2", 2))
	o.nextState(1, nil)
	res = o.timers(1, timerAt("a", e.at(10*time.Second)))
	require.Nil(t, res.Batch)
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, info.Timer.Equal(e.at(10*time.Second)), "the lookup shows the timer: %v", info.Timer)
	require.True(t, res.NextDue.Equal(e.at(10*time.Second)), "next due %v", res.NextDue)

	e.clock.Advance(10 * time.Second)
	res = o.timers(5, nil)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	a := jobOf(res.Batch, "a")
	require.True(t, a.Timer)
	require.Empty(t, a.Payloads)
	require.Equal(t, persistence.State{Data: []byte("s1"), Version: 1}, *a.State)
	res = o.timers(5, nil)
	require.Nil(t, res.Batch, "a timer fires once")
	require.True(t, res.NextDue.IsZero())
	require.Equal(t, 1, res.Processed)
	require.Nil(t, e.get("a"), "a timer leaves no job behind")
}

// §11: a cleared timer never fires; setting one replaces it.
func testTimerCleared(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	o.nextState(2, nil)
	o.timers(2, []persistence.TimerWrite{{ID: "a", At: e.at(time.Second)}, {ID: "b", At: e.at(time.Second)}})
	e.enqueue(job("a", "2", 2), job("b", "2", 2))
	o.timers(2, nil)
	o.timers(0, []persistence.TimerWrite{{ID: "a", Clear: true}, {ID: "b", At: e.at(time.Hour)}})
	e.clock.Advance(time.Minute)
	res := o.timers(5, nil)
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(e.at(time.Hour-time.Minute)), "next due %v", res.NextDue)
}

// §11: a payload brings the id back before its timer; the timer is not
// consumed by that call and fires at its time unless the handler clears
// it. A failed id's timer write is dropped.
func testTimerEarlierWakeUp(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.nextState(1, nil)
	o.timers(1, timerAt("a", e.at(time.Minute)))
	e.clock.Advance(10 * time.Second)
	e.enqueue(job("a", "2", 2))
	res := o.timers(1, nil)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.False(t, jobOf(res.Batch, "a").Timer)
	require.Equal(t, []string{"2"}, payloadData(jobOf(res.Batch, "a").Payloads))
	// A failed call's timer change commits nothing.
	res = o.timers(1, timerAt("a", e.at(time.Hour)), o.fail("a", "x", time.Hour))
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(e.at(50*time.Second)), "next due %v", res.NextDue)
	e.clock.Advance(50 * time.Second)
	res = o.timers(1, nil)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.True(t, jobOf(res.Batch, "a").Timer)
	require.Empty(t, jobOf(res.Batch, "a").Payloads, "the failed payload waits for its retry")
}

// §11: a fired timer whose call does not complete (the owner is gone, or
// the call failed) fires again: at once after a restore, at the retry time
// after a failure.
func testTimerSurvivesRestore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.nextState(1, nil)
	o.timers(1, timerAt("a", e.at(time.Second)))
	e.clock.Advance(time.Second)
	res := o.timers(1, nil)
	require.True(t, jobOf(res.Batch, "a").Timer)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))

	o = e.own(0)
	res = o.timers(1, nil)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.True(t, jobOf(res.Batch, "a").Timer)
	res = o.timers(1, nil, o.fail("a", "boom", 30*time.Second))
	require.Nil(t, res.Batch)
	require.Equal(t, 1, res.Failed)
	require.True(t, res.NextDue.Equal(e.at(30*time.Second)), "next due %v", res.NextDue)
	require.Nil(t, e.get("a"), "no job is made of a timer")
	e.clock.Advance(30 * time.Second)
	res = o.timers(1, nil)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.True(t, jobOf(res.Batch, "a").Timer)
}
