package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Cancel (docs/contract.md §3.13).

var cancelTests = []testCase{
	{"Rule13_CancelQueued", testCancelQueued, needAdmin},
	{"Rule13_CancelInFlightMarksAndSettleDisposes", testCancelInFlight, needAdmin},
	{"Rule13_CancelledSuccessStaysSucceeded", testCancelSucceeded, needAdmin},
	{"Rule13_CancelledBatchPeersGoBack", testCancelPeers, needAdmin},
	{"Rule13_CancelledRestoreDisposes", testCancelRestore, needAdmin},
	{"Rule13_CancelNotice", testCancelNotice, needAdmin},
	{"Rule13_CancelledOutcomeDisposes", testCancelledOutcomeDisposes, needAdmin},
}

// morgued returns the morgue payloads of id and its error.
func (e *env) morgued(id string) ([]string, string) {
	e.t.Helper()
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: id, Max: id})
	require.NoError(e.t, err)
	if len(page.Entries) == 0 {
		return nil, ""
	}
	return pl(page.Entries[0].Payloads), page.Entries[0].Error
}

// cancel cancels id with mode and returns what it did.
func (e *env) cancel(id string, mode persistence.CancelMode) persistence.CancelResult {
	e.t.Helper()
	res, err := e.admin().CancelJob(e.ctx, e.queue, id, mode)
	require.NoError(e.t, err)
	return res
}

// docs/contract.md §3.13: a cancel of a queued id kills (the default) or
// deletes its queued payloads, marks nothing, and a second cancel, or one
// of an unknown id, finds nothing.
func testCancelQueued(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "x", 1), job("a", "y", 2), job("b", "v", 1), job("c", "w", 1))
	require.Equal(t, persistence.CancelResult{Queued: true, Payloads: 2}, e.cancel("a", persistence.CancelKill))
	require.Nil(t, e.get("a"))
	ps, msg := e.morgued("a")
	require.Equal(t, []string{"x@1", "y@2"}, ps)
	require.Equal(t, "cancelled", msg)
	require.Equal(t, persistence.CancelResult{Queued: true, Payloads: 1}, e.cancel("b", persistence.CancelDelete))
	require.Nil(t, e.get("b"))
	ps, _ = e.morgued("b")
	require.Empty(t, ps, "a delete drops the payloads")
	require.False(t, e.cancel("a", persistence.CancelKill).Found(), "idempotent")
	require.False(t, e.cancel("nope", persistence.CancelKill).Found())
	require.NotNil(t, e.get("c"), "another id is untouched")
	require.EqualValues(t, 0, e.stats().Cancelled, "queued payloads are not counted as cancelled calls")
	_, err := e.admin().CancelJob(e.ctx, e.queue, "c", "bogus")
	require.ErrorIs(t, err, persistence.ErrInvalid)
	o := e.own(0)
	require.Equal(t, []string{"c"}, ids(o.next(5).Batch))
}

// docs/contract.md §3.13: a cancel of an id in flight kills what is queued
// of it and marks the in-flight record; whatever the call's outcome except
// success (here a failure with retries left), the settle disposes of its
// payloads per the mode, counts it cancelled, and clears the mark: the id
// is not fetched again.
func testCancelInFlight(t *testing.T, h Harness) {
	for _, mode := range []persistence.CancelMode{persistence.CancelKill, persistence.CancelDelete} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, h, 1)
			e.enqueue(job("a", "x", 1), job("b", "v", 1))
			o := e.own(0)
			require.Equal(t, []string{"a"}, ids(o.next(1).Batch))
			e.enqueue(job("a", "y", 2))
			res := e.cancel("a", mode)
			require.Equal(t, persistence.CancelResult{Queued: true, Payloads: 1, InFlight: true}, res)
			require.True(t, e.cancel("a", mode).InFlight, "cancelling again marks again, harmlessly")
			info, err := e.s.GetJob(e.ctx, e.queue, "a")
			require.NoError(t, err)
			require.NotNil(t, info.InFlight, "the call still holds it until its settle")
			require.Equal(t, []string{"b"}, ids(o.next(5, o.fail("a", "context canceled", 0)).Batch))
			ps, msg := e.morgued("a")
			if mode == persistence.CancelKill {
				require.Equal(t, []string{"x@1", "y@2"}, ps)
				require.Equal(t, "cancelled", msg)
			} else {
				require.Empty(t, ps)
			}
			require.Nil(t, e.get("a"))
			st := e.stats()
			require.EqualValues(t, 1, st.Cancelled)
			require.EqualValues(t, 0, st.Failed, "a cancelled id is not failed")
			e.enqueue(job("a", "z", 3))
			o.next(0)
			require.Equal(t, []string{"a"}, ids(o.next(5).Batch), "the mark went with the settle")
			o.next(0, o.fail("a", "boom", 0))
			require.NotNil(t, e.get("a"), "a later failure retries as usual")
		})
	}
}

// docs/contract.md §3.13: a call that succeeded although its id was
// cancelled meanwhile stays a success.
func testCancelSucceeded(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "x", 1))
	o := e.own(0)
	require.Equal(t, []string{"a"}, ids(o.next(1).Batch))
	require.Equal(t, persistence.CancelResult{InFlight: true}, e.cancel("a", persistence.CancelKill))
	o.next(0)
	ps, _ := e.morgued("a")
	require.Empty(t, ps)
	st := e.stats()
	require.EqualValues(t, 1, st.Processed)
	require.EqualValues(t, 0, st.Cancelled)
}

// docs/contract.md §3.13: in a call of several ids, the cancelled one is
// disposed of and the others, interrupted, go back as they were (not
// failed).
func testCancelPeers(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "x", 1), job("b", "v", 2))
	o := e.own(0)
	require.Equal(t, []string{"a", "b"}, ids(o.next(2).Batch))
	require.True(t, e.cancel("b", persistence.CancelKill).InFlight)
	o.seq++
	res, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Settle: o.cur.Seq, NextSeq: o.seq,
		MaxRetryCount: o.maxRetry, Interrupted: []string{"a", "b"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Restored)
	o.cur = nil
	ps, _ := e.morgued("b")
	require.Equal(t, []string{"v@2"}, ps)
	require.NotNil(t, e.get("a"))
	require.Equal(t, -1, e.get("a").RetryCount, "an interrupted peer is not failed")
	require.EqualValues(t, 1, e.stats().Cancelled)
}

// docs/contract.md §3.13: a cancelled id whose owner released the shard,
// or crashed, is disposed of when its in-flight record is restored, not
// put back.
func testCancelRestore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "x", 1), job("b", "v", 2))
	o := e.own(0)
	require.Equal(t, []string{"a", "b"}, ids(o.next(2).Batch))
	require.True(t, e.cancel("a", persistence.CancelDelete).InFlight)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	require.Nil(t, e.get("a"))
	require.NotNil(t, e.get("b"))
	ps, _ := e.morgued("a")
	require.Empty(t, ps)
	require.EqualValues(t, 1, e.stats().Cancelled)
	// A new owner's acquire after a crash disposes of a marked id the same
	// way, and counts only what it puts back.
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	crashed, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Second)
	require.NoError(t, err)
	e.enqueue(job("c", "w", 3))
	res, err := e.s.Advance(e.ctx, crashed, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, ids(res.Batch))
	require.True(t, e.cancel("c", persistence.CancelKill).InFlight)
	var restored int
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		_, n, err := e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
		if errors.Is(err, persistence.ErrLeaseHeld) {
			return false
		}
		require.NoError(t, err)
		restored = n
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, restored, "b alone goes back")
	require.NotNil(t, e.get("b"))
	require.Nil(t, e.get("c"))
	ps, msg := e.morgued("c")
	require.Equal(t, []string{"w@3"}, ps)
	require.Equal(t, "cancelled", msg)
	require.EqualValues(t, 2, e.stats().Cancelled)
}

// docs/contract.md §3.13: a cancel of an id in flight sends its queue's
// subscribers a cancel notice naming the shard and the id (a store whose
// subscription does not carry them is skipped); one of an id only queued
// sends none.
func testCancelNotice(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	sub, err := e.s.Subscribe(e.ctx, e.queue)
	require.NoError(t, err)
	defer sub.Close()
	cs, ok := sub.(persistence.CancelSubscription)
	if !ok {
		t.Skip("the store's subscription carries no cancel notices")
	}
	id := "a:b/c"
	sh := persistence.ShardOf(id, 4)
	e.enqueue(job(id, "v", 1), job("queued", "w", 1))
	o := e.own(sh)
	require.Equal(t, []string{id}, ids(o.next(1).Batch))
	e.cancel("queued", persistence.CancelKill)
	require.True(t, e.cancel(id, persistence.CancelKill).InFlight)
	select {
	case n := <-cs.Cancels():
		require.Equal(t, persistence.CancelNotice{ShardRef: persistence.ShardRef{Queue: e.queue, Shard: sh}, ID: id}, n)
	case <-time.After(5 * time.Second):
		t.Fatal("no cancel notice within 5s")
	}
	require.NoError(t, sub.Close())
	_, open := <-cs.Cancels()
	require.False(t, open, "Close closes Cancels")
}

// docs/contract.md §3.13 and §3.11: an outcome the handler chose (snooze,
// dead now, discard) is not a success: a cancelled id settled with one is
// disposed of per the cancel's mode, not put back or buried as the outcome
// would have it.
func testCancelledOutcomeDisposes(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("s", "x", 1), job("d", "y", 1), job("r", "z", 1))
	o := e.own(0)
	require.Equal(t, []string{"d", "r", "s"}, ids(o.next(3).Batch))
	for _, id := range []string{"s", "d"} {
		require.True(t, e.cancel(id, persistence.CancelDelete).InFlight)
	}
	require.True(t, e.cancel("r", persistence.CancelKill).InFlight)
	o.seq++
	_, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Settle: o.cur.Seq, NextSeq: o.seq, MaxRetryCount: o.maxRetry,
		Snoozes:  []persistence.Snooze{{ID: "s", RetryAt: e.at(time.Hour)}},
		Deaths:   []persistence.Death{{ID: "d", Reason: "bad"}},
		Discards: []persistence.Discard{{ID: "r", Reason: "stale"}}})
	require.NoError(t, err)
	o.cur = nil
	for _, id := range []string{"s", "d"} {
		require.Nil(t, e.get(id), "%s: not put back", id)
		ps, _ := e.morgued(id)
		require.Empty(t, ps, "%s: deleted, not buried", id)
	}
	ps, msg := e.morgued("r")
	require.Equal(t, []string{"z@1"}, ps, "a kill buries what a discard would drop")
	require.Equal(t, "cancelled", msg)
	require.EqualValues(t, 3, e.stats().Cancelled)
}
