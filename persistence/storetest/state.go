package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Entity state of stateful queues (docs/contract.md §11).

var stateTests = []testCase{
	{"State_CommittedWithAck", testStateCommittedWithAck, needState},
	{"State_FailedIDCommitsNothing", testStateFailedIDCommitsNothing, needState},
	{"State_LostLeaseCommitsNothing", testStateLostLeaseCommitsNothing, needState},
	{"State_CASConflictHandsOverAgain", testStateCASConflict, needState},
	{"State_ConflictWaitsItsDelay", testStateConflictDelay, needState},
	{"State_VersionGrowsByOne", testStateVersionGrowsByOne, needState},
	{"State_SizeLimit", testStateSizeLimit, needState},
	{"State_DeleteJobKeepsStateLookupShowsIt", testStateDeleteJobKeepsState, needAdmin | needState},
	{"State_RecordWithoutStateSettles", testStateRecordWithoutState, needState},
	{"State_DeleteKeepsTheVersion", testStateDeleteKeepsTheVersion, needState},
}

// stateOwner drives one shard of a stateful queue.
func (o *owner) stateful(n int, writes []persistence.StateWrite, failures ...persistence.Failure) (persistence.AdvanceResult, error) {
	var settle int64
	if o.cur != nil {
		settle = o.cur.Seq
	}
	o.seq++
	res, err := o.e.s.Advance(o.e.ctx, o.lease, persistence.AdvanceRequest{
		Settle: settle, Failures: failures, Fetch: n, NextSeq: o.seq, MaxRetryCount: o.maxRetry,
		Stateful: true, StateWrites: writes,
	})
	if err == nil {
		o.cur = res.Batch
	}
	return res, err
}

func (o *owner) nextState(n int, writes []persistence.StateWrite, failures ...persistence.Failure) persistence.AdvanceResult {
	o.e.t.Helper()
	res, err := o.stateful(n, writes, failures...)
	require.NoError(o.e.t, err)
	return res
}

func set(id, data string) persistence.StateWrite {
	return persistence.StateWrite{ID: id, Data: []byte(data)}
}

func (e *env) state(id string) persistence.State {
	e.t.Helper()
	st, err := e.states().GetState(e.ctx, e.queue, id)
	require.NoError(e.t, err)
	return st
}

func stateOf(t *testing.T, b *persistence.Batch, id string) persistence.State {
	t.Helper()
	j := jobOf(b, id)
	require.NotNil(t, j, "id %s in batch", id)
	require.NotNil(t, j.State, "state of %s handed over", id)
	return *j.State
}

// §11: the state written by the handler commits with the acknowledgement,
// and the next fetch hands it over with its version.
func testStateCommittedWithAck(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	res := o.nextState(2, nil)
	require.Equal(t, []string{"a", "b"}, ids(res.Batch))
	require.Equal(t, persistence.State{}, stateOf(t, res.Batch, "a"))
	require.Equal(t, int64(0), e.state("a").Version, "nothing committed before the settle")

	e.enqueue(job("a", "2", 2))
	res = o.nextState(2, []persistence.StateWrite{set("a", "count=1"), set("b", "count=1")})
	require.Equal(t, 2, res.Processed)
	require.Equal(t, persistence.State{Data: []byte("count=1"), Version: 1}, e.state("a"))
	require.Equal(t, persistence.State{Data: []byte("count=1"), Version: 1}, e.state("b"))
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.Equal(t, persistence.State{Data: []byte("count=1"), Version: 1}, stateOf(t, res.Batch, "a"))

	// A delete commits with the ack too; the version keeps counting.
	res = o.nextState(1, []persistence.StateWrite{{ID: "a", Delete: true}})
	require.Equal(t, 1, res.Processed)
	require.Equal(t, persistence.State{Version: 2, Deleted: true}, e.state("a"))
	require.Equal(t, int64(1), e.state("b").Version)
}

// §11: a failed id commits none of its state write; the others do.
func testStateFailedIDCommitsNothing(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	o.nextState(2, nil)
	res := o.nextState(0, []persistence.StateWrite{set("a", "x"), set("b", "y")}, o.fail("a", "boom", time.Hour))
	require.Equal(t, 1, res.Processed)
	require.Equal(t, 1, res.Failed)
	require.Equal(t, int64(0), e.state("a").Version)
	require.Equal(t, persistence.State{Data: []byte("y"), Version: 1}, e.state("b"))
	require.Equal(t, 0, e.get("a").RetryCount)
}

// §11: a settle under a lost lease commits nothing.
func testStateLostLeaseCommitsNothing(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.nextState(1, nil)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	_, err := o.stateful(0, []persistence.StateWrite{set("a", "x")})
	require.ErrorIs(t, err, persistence.ErrLeaseLost)
	require.Equal(t, int64(0), e.state("a").Version)
	require.NotNil(t, e.get("a"), "the job went back to the queue")
}

// §11: an external compare-and-set while the id is in flight makes the
// call's commit for that id fail with a conflict: nothing of it commits,
// its payloads stay queued with their retry count, and the id is handed
// over again with the new state.
func testStateCASConflict(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	o.nextState(2, nil)
	o.nextState(2, []persistence.StateWrite{set("a", "h1"), set("b", "h1")})
	e.enqueue(job("a", "2", 2), job("b", "2", 2))
	res := o.nextState(2, nil)
	require.Equal(t, int64(1), stateOf(t, res.Batch, "a").Version)

	v, err := e.states().SetState(e.ctx, e.queue, "a", []byte("outside"), 1, 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), v)

	res = o.nextState(2, []persistence.StateWrite{set("a", "h2"), set("b", "h2")})
	require.Equal(t, []string{"a"}, res.Conflicts)
	require.Equal(t, 1, res.Processed)
	require.Equal(t, 0, res.Failed)
	require.Equal(t, persistence.State{Data: []byte("outside"), Version: 2}, e.state("a"), "no lost update")
	require.Equal(t, persistence.State{Data: []byte("h2"), Version: 2}, e.state("b"))
	// Handed over again at once, with the new state and its payloads as
	// they were.
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.Equal(t, persistence.State{Data: []byte("outside"), Version: 2}, stateOf(t, res.Batch, "a"))
	require.Equal(t, []string{"2"}, payloadData(jobOf(res.Batch, "a").Payloads))
	require.Equal(t, -1, jobOf(res.Batch, "a").RetryCount)

	res = o.nextState(0, []persistence.StateWrite{set("a", "h3")})
	require.Empty(t, res.Conflicts)
	require.Equal(t, persistence.State{Data: []byte("h3"), Version: 3}, e.state("a"))
}

// §11: the version grows by one per change; compare-and-set refuses a stale
// version and writes nothing.
func testStateVersionGrowsByOne(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	require.Equal(t, persistence.State{}, e.state("x"))
	_, err := e.states().SetState(e.ctx, e.queue, "x", []byte("a"), 1, 0)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	for want := int64(1); want <= 3; want++ {
		v, err := e.states().SetState(e.ctx, e.queue, "x", []byte{byte('a' + want)}, want-1, 0)
		require.NoError(t, err)
		require.Equal(t, want, v)
	}
	_, err = e.states().SetState(e.ctx, e.queue, "x", []byte("stale"), 2, 0)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	require.Equal(t, persistence.State{Data: []byte("d"), Version: 3}, e.state("x"))
	// Empty state is a state.
	v, err := e.states().SetState(e.ctx, e.queue, "x", nil, 3, 0)
	require.NoError(t, err)
	require.Equal(t, int64(4), v)
	require.Equal(t, persistence.State{Data: []byte{}, Version: 4}, e.state("x"))
	require.True(t, e.state("x").Exists())

	_, err = e.states().DeleteState(e.ctx, e.queue, "x", 3)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	ok, err := e.states().DeleteState(e.ctx, e.queue, "x", 4)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, persistence.State{Version: 5, Deleted: true}, e.state("x"))
	require.False(t, e.state("x").Exists())
	_, err = e.states().DeleteState(e.ctx, e.queue, "x", 0)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	ok, err = e.states().DeleteState(e.ctx, e.queue, "x", 5)
	require.NoError(t, err)
	require.False(t, ok, "nothing to delete")
	require.Equal(t, int64(5), e.state("x").Version)
	ok, err = e.states().DeleteState(e.ctx, e.queue, "never", 0)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, persistence.State{}, e.state("never"))

	_, err = e.states().GetState(e.ctx, "nope", "x")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	_, err = e.states().SetState(e.ctx, e.queue, "", []byte("a"), 0, 0)
	require.ErrorIs(t, err, persistence.ErrInvalid)
}

// §11: a state is at most max_state_bytes; over it, nothing is written.
func testStateSizeLimit(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	_, err := e.states().SetState(e.ctx, e.queue, "a", []byte(strings.Repeat("x", 11)), 0, 10)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "state", fe.Field)
	v, err := e.states().SetState(e.ctx, e.queue, "a", []byte(strings.Repeat("x", 10)), 0, 10)
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	_, err = e.states().SetState(e.ctx, e.queue, "a", make([]byte, persistence.DefaultMaxStateBytes+1), 1, 0)
	require.ErrorAs(t, err, &fe)

	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.nextState(1, nil)
	o.seq++
	_, err = e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Settle: o.cur.Seq, NextSeq: o.seq, MaxRetryCount: 25,
		Stateful: true, StateWrites: []persistence.StateWrite{set("a", "12345")}, MaxStateBytes: 4})
	require.ErrorAs(t, err, &fe)
	require.Equal(t, int64(1), e.state("a").Version, "nothing written")
	res := o.nextState(0, []persistence.StateWrite{set("a", "1234")})
	require.Equal(t, 1, res.Processed)
	require.Equal(t, persistence.State{Data: []byte("1234"), Version: 2}, e.state("a"))
}

// §11: deleting a job keeps its state; the one-job lookup shows it, also
// for an id without a job.
func testStateDeleteJobKeepsState(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	_, err := e.states().SetState(e.ctx, e.queue, "a", []byte("s"), 0, 0)
	require.NoError(t, err)
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.NotNil(t, info.Queued)
	require.Equal(t, &persistence.State{Data: []byte("s"), Version: 1}, info.State)

	ok, err := e.admin().DeleteJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, persistence.State{Data: []byte("s"), Version: 1}, e.state("a"))
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.Equal(t, &persistence.State{Data: []byte("s"), Version: 1}, info.State)

	// Deleting the state leaves a tombstone that the lookup still shows:
	// its version is what the next compare-and-set names.
	_, err = e.states().DeleteState(e.ctx, e.queue, "a", 1)
	require.NoError(t, err)
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.Nil(t, info.InFlight)
	require.Equal(t, &persistence.State{Version: 2, Deleted: true}, info.State)

	// An id that never had anything is not found.
	_, err = e.s.GetJob(e.ctx, e.queue, "never")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

// An in-flight record written without state versions (fetched by a queue
// that was not stateful, or by an earlier release) still settles and
// restores: its ids are not checked for conflicts.
func testStateRecordWithoutState(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	res := o.next(1)
	require.Nil(t, jobOf(res.Batch, "a").State)
	_, err := e.states().SetState(e.ctx, e.queue, "a", []byte("outside"), 0, 0)
	require.NoError(t, err)
	res = o.nextState(1, []persistence.StateWrite{set("a", "h")})
	require.Equal(t, 1, res.Processed)
	require.Empty(t, res.Conflicts)
	require.Equal(t, persistence.State{Data: []byte("h"), Version: 2}, e.state("a"))
	require.Equal(t, []string{"b"}, ids(res.Batch))

	// Restore of a stateful record.
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	o = e.own(0)
	res = o.nextState(1, nil)
	require.Equal(t, []string{"b"}, ids(res.Batch))
	require.Equal(t, -1, jobOf(res.Batch, "b").RetryCount)
}

// §11: deleting a state keeps its version counting (a tombstone), so the
// ABA sequence fails: a client reads (S, 1), the handler deletes it and
// later sets a new state; the client's compare-and-set with version 1 must
// conflict instead of overwriting a state it never saw.
func testStateDeleteKeepsTheVersion(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	v, err := e.states().SetState(e.ctx, e.queue, "a", []byte("S"), 0, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	seen := e.state("a") // the client's read: (S, 1)
	require.Equal(t, persistence.State{Data: []byte("S"), Version: 1}, seen)

	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	res := o.nextState(1, nil)
	require.Equal(t, persistence.State{Data: []byte("S"), Version: 1}, stateOf(t, res.Batch, "a"))
	res = o.nextState(0, []persistence.StateWrite{{ID: "a", Delete: true}})
	require.Equal(t, 1, res.Processed)
	require.Equal(t, persistence.State{Version: 2, Deleted: true}, e.state("a"))

	// The tombstone is handed over like a state: no data, its version.
	e.enqueue(job("a", "2", 2))
	res = o.nextState(1, nil)
	require.Equal(t, persistence.State{Version: 2, Deleted: true}, stateOf(t, res.Batch, "a"))
	res = o.nextState(0, []persistence.StateWrite{set("a", "T")})
	require.Equal(t, 1, res.Processed)
	require.Equal(t, persistence.State{Data: []byte("T"), Version: 3}, e.state("a"))

	_, err = e.states().SetState(e.ctx, e.queue, "a", []byte("lost update"), seen.Version, 0)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	_, err = e.states().DeleteState(e.ctx, e.queue, "a", seen.Version)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	require.Equal(t, persistence.State{Data: []byte("T"), Version: 3}, e.state("a"))

	// An outside delete leaves a tombstone too; a set from it goes on
	// counting, and the lookup of an id with nothing but a tombstone shows
	// it with its version.
	ok, err := e.states().DeleteState(e.ctx, e.queue, "a", 3)
	require.NoError(t, err)
	require.True(t, ok)
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.Equal(t, &persistence.State{Version: 4, Deleted: true}, info.State)
	_, err = e.states().SetState(e.ctx, e.queue, "a", []byte("U"), 0, 0)
	require.ErrorIs(t, err, persistence.ErrVersionConflict)
	v, err = e.states().SetState(e.ctx, e.queue, "a", []byte("U"), 4, 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), v)
}

// §11: a conflicting id waits for the owner's conflict delay (its own, or
// the request's) before it is fetched again, with its payloads, perform_at
// and retry count as they were; an id that did not conflict is not held.
func testStateConflictDelay(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1), job("c", "1", 1))
	o := e.own(0)
	require.Equal(t, []string{"a", "b", "c"}, ids(o.nextState(3, nil).Batch))
	for _, id := range []string{"a", "b"} {
		_, err := e.states().SetState(e.ctx, e.queue, id, []byte("outside"), 0, 0)
		require.NoError(t, err)
	}
	o.seq++
	res, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{
		Settle: o.cur.Seq, Fetch: 3, NextSeq: o.seq, MaxRetryCount: o.maxRetry, Stateful: true,
		StateWrites:   []persistence.StateWrite{set("a", "h"), set("b", "h"), set("c", "h")},
		ConflictDelay: 100 * time.Millisecond, ConflictDelays: map[string]time.Duration{"b": time.Second},
	})
	require.NoError(t, err)
	o.cur = res.Batch
	require.ElementsMatch(t, []string{"a", "b"}, res.Conflicts)
	require.Equal(t, 1, res.Processed)
	require.Nil(t, res.Batch, "not handed over again by the same call")
	require.WithinDuration(t, e.at(100*time.Millisecond), res.NextDue, time.Millisecond)
	require.True(t, e.get("a").PerformAt.Equal(e.clock.Now()), "perform_at as it was")

	e.clock.Advance(100 * time.Millisecond)
	res = o.nextState(3, nil)
	require.Equal(t, []string{"a"}, ids(res.Batch), "b waits for its own delay")
	require.Equal(t, -1, jobOf(res.Batch, "a").RetryCount)
	require.Equal(t, persistence.State{Data: []byte("outside"), Version: 1}, stateOf(t, res.Batch, "a"))
	e.clock.Advance(900 * time.Millisecond)
	res = o.nextState(3, []persistence.StateWrite{set("a", "h")})
	require.Empty(t, res.Conflicts)
	require.Equal(t, []string{"b"}, ids(res.Batch))
}
