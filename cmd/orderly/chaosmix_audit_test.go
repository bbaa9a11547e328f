package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// The cancel audit of TestChaos: after a cancel's answer, a payload stored
// before it was sent may reach the receiver only in the one call the
// cancel found in flight; payloads stored after it, or whose enqueue
// overlapped it, are not judged.
func TestAuditCancels(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	stored := map[string][2]int{"old": {0, 10}, "overlap": {90, 130}, "new": {200, 210}}
	sent := func(p string) (time.Time, time.Time, bool) {
		s, ok := stored[p]
		return at(s[0]), at(s[1]), ok
	}
	call := func(ms int, delivery, data string) history.Call {
		return history.Call{ID: "a", Delivery: delivery, Start: at(ms), End: at(ms + 5), Payloads: []history.Payload{{Data: data}}}
	}
	cancel := func(inFlight bool) cancelRecord {
		return cancelRecord{ID: "a", Sent: at(100), Answered: at(120), Status: http.StatusOK, Answer: apiv1.Cancelled{Mode: "kill", InFlight: inFlight}}
	}
	before := call(50, "q/0/1/1", "old") // started before the cancel: fine
	late := call(150, "q/0/1/2", "old")
	again := call(170, "q/0/2/1", "old")
	others := []history.Call{before, call(150, "q/0/1/3", "overlap"), call(220, "q/0/1/4", "new")}

	require.Empty(t, auditCancels(others, []cancelRecord{cancel(false)}, sent))
	require.Len(t, auditCancels(append(others, late), []cancelRecord{cancel(false)}, sent), 1, "nothing in flight: no late call")
	require.Empty(t, auditCancels(append(others, late), []cancelRecord{cancel(true)}, sent), "the call in flight may arrive late")
	require.Len(t, auditCancels(append(others, late, again), []cancelRecord{cancel(true)}, sent), 1, "but only that one")
	unanswered := cancel(false)
	unanswered.Status = 0
	require.Empty(t, auditCancels(append(others, late), []cancelRecord{unanswered}, sent), "a cancel not answered is not judged")
}

// The counters' bounds: at most the answers; at least those of ids never
// cancelled whose payload did not come back under a later lease.
func TestCounterBounds(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	call := func(id, delivery, outcome, data string) history.Call {
		return history.Call{ID: id, Delivery: delivery, Start: t0, End: t0, Outcome: outcome,
			Payloads: []history.Payload{{Data: data}}, Acked: outcome == ""}
	}
	calls := []history.Call{
		call("a", "q/0/1/1", history.Snoozed, "a1"), call("a", "q/0/1/2", "", "a1"), // settled: sure
		call("b", "q/0/1/3", history.Snoozed, "b1"), call("b", "q/0/2/1", "", "b1"), // maybe lost
		call("c", "q/0/1/4", history.Discarded, "c1"), // cancelled id: not sure
		call("d", "q/0/1/5", history.Discarded, "d1"),
	}
	recs := []cancelRecord{{ID: "c", Status: http.StatusOK, Answer: apiv1.Cancelled{InFlight: true}},
		{ID: "e", Status: http.StatusNotFound}, {ID: "f", Status: http.StatusServiceUnavailable}}
	b := boundsOf(calls, recs)
	require.Equal(t, counterBounds{snoozedMin: 1, snoozedMax: 2, discardedMin: 1, discardedMax: 2, cancelledMax: 2}, b)
	require.Empty(t, b.check(apiv1.Queue{Snoozed: 2, Discarded: 1, Cancelled: 2}))
	require.Len(t, b.check(apiv1.Queue{Snoozed: 0, Discarded: 3, Cancelled: 3}), 3)
}

// A payload delivered again under the same lease is explained only when
// the call that first had it answered was aborted by a cancel of another
// id of that call, answered in_flight: the id's last call started by the
// cancel's answer.
func TestAbortedByCancel(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	calls := []history.Call{
		{ID: "c", Delivery: "q/0/1/1", Start: at(10)},
		{ID: "c", Delivery: "q/0/1/2", Start: at(100)}, // held at the cancel
		{ID: "x", Delivery: "q/0/1/2", Start: at(100), Acked: true},
	}
	rec := cancelRecord{ID: "c", Sent: at(105), Answered: at(110), Status: http.StatusOK, Answer: apiv1.Cancelled{InFlight: true}}
	explained := abortedByCancel(calls, []cancelRecord{rec})
	require.True(t, explained("x", "q/0/1/2", "q/0/1/9"), "the aborted call settled nothing")
	require.False(t, explained("x", "q/0/1/1", "q/0/1/9"), "an earlier call of the id was not aborted")
	rec.Answer.InFlight = false
	require.False(t, abortedByCancel(calls, []cancelRecord{rec})("x", "q/0/1/2", "q/0/1/9"), "no call in flight: nothing aborted")
	rec.Answer.InFlight, rec.Status = true, 0
	require.False(t, abortedByCancel(calls, []cancelRecord{rec})("x", "q/0/1/2", "q/0/1/9"), "a cancel not answered is not judged")
}
