package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Emits and the per-shard outbox (docs/contract.md §11).

var outboxTests = []testCase{
	{"Outbox_EmitCommittedWithAck", testOutboxCommittedWithAck, needNone},
	{"Outbox_DroppedWithFailedID", testOutboxDroppedWithFailedID, needState},
	{"Outbox_DroppedOnLostLease", testOutboxDroppedOnLostLease, needNone},
	{"Outbox_RelayedByNextOwner", testOutboxRelayedByNextOwner, needNone},
	{"Outbox_BadEmitsRefused", testOutboxBadEmits, needNone},
}

// emitReq settles the current batch with emits (and failures, state
// writes when stateful) and fetches up to n.
func (o *owner) emitReq(n int, stateful bool, emits []persistence.Emit, failures ...persistence.Failure) persistence.AdvanceRequest {
	var settle int64
	if o.cur != nil {
		settle = o.cur.Seq
	}
	o.seq++
	return persistence.AdvanceRequest{Settle: settle, Failures: failures, Fetch: n, NextSeq: o.seq,
		MaxRetryCount: o.maxRetry, Stateful: stateful, Emits: emits}
}

func (o *owner) emitting(n int, emits []persistence.Emit, failures ...persistence.Failure) persistence.AdvanceResult {
	o.e.t.Helper()
	res, err := o.e.s.Advance(o.e.ctx, o.lease, o.emitReq(n, false, emits, failures...))
	require.NoError(o.e.t, err)
	o.cur = res.Batch
	return res
}

func emit(from, queue, id, payload string) persistence.Emit {
	return persistence.Emit{From: from, Queue: queue, Job: persistence.NewJob{ID: id, Payload: []byte(payload)}}
}

// relay relays the outbox of shard 0 of the env's queue until it is empty.
func (e *env) relay() (relayed, dropped int) {
	e.t.Helper()
	for {
		r, d, more, err := e.s.RelayOutbox(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: 0}, 2)
		require.NoError(e.t, err)
		relayed, dropped = relayed+r, dropped+d
		if !more {
			return relayed, dropped
		}
	}
}

// queued returns the payloads of id queued in queue, nil when none.
func (e *env) queued(queue, id string) []string {
	e.t.Helper()
	info, err := e.s.GetJob(e.ctx, queue, id)
	if err != nil {
		require.ErrorIs(e.t, err, persistence.ErrNotFound)
		return nil
	}
	if info.Queued == nil {
		return nil
	}
	return payloadData(info.Queued.Payloads)
}

// §11: the emits of an acknowledged id are committed with its ack into the
// outbox, enqueued into their targets (another queue, or the same) only by
// the relay, and relayed once; a retried Advance (a lost reply) does not
// emit again.
func testOutboxCommittedWithAck(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "notify", Shards: 3}))
	e.enqueue(job("a", "1", 1), job("b", "1", 1))
	o := e.own(0)
	res := o.next(2)
	require.Zero(t, res.Outbox, "a queue that emits nothing reports no outbox")

	later := persistence.Emit{From: "b", Queue: "notify", Job: persistence.NewJob{ID: "n-2", Payload: []byte("later"),
		Score: score(5), PerformAt: e.at(time.Hour), Headers: map[string]string{"traceparent": "00-1", "k": ""}}}
	emits := []persistence.Emit{emit("a", "notify", "n-1", "paid"), emit("a", e.queue, "c", "from-a"), later}
	req := o.emitReq(0, false, emits)
	res, err := e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Equal(t, 2, res.Processed)
	require.Equal(t, 3, res.Outbox)
	require.Nil(t, e.queued("notify", "n-1"), "not enqueued before the relay")
	require.Nil(t, e.queued(e.queue, "c"))

	// The same call again (its reply was lost): nothing is emitted twice.
	res, err = e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Equal(t, 3, res.Outbox)

	relayed, dropped := e.relay()
	require.Equal(t, 3, relayed)
	require.Zero(t, dropped)
	require.Equal(t, []string{"paid"}, e.queued("notify", "n-1"))
	require.Equal(t, []string{"from-a"}, e.queued(e.queue, "c"))
	info, err := e.s.GetJob(e.ctx, "notify", "n-2")
	require.NoError(t, err)
	require.Equal(t, []persistence.Payload{{Data: []byte("later"), Score: 5, Headers: map[string]string{"traceparent": "00-1", "k": ""}}},
		info.Queued.Payloads, "an emit's headers travel with its payload (§10)")
	require.WithinDuration(t, e.at(time.Hour), info.Queued.PerformAt, time.Millisecond)
	relayed, _ = e.relay()
	require.Zero(t, relayed, "relayed once")
}

// §11: a failed, skipped or conflicting id's emits are dropped with it.
func testOutboxDroppedWithFailedID(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1), job("b", "1", 1), job("c", "1", 1), job("d", "1", 1))
	o := e.own(0)
	res, err := e.s.Advance(e.ctx, o.lease, o.emitReq(4, true, nil))
	require.NoError(t, err)
	o.cur = res.Batch
	require.Len(t, res.Batch.Jobs, 4)
	_, err = e.states().SetState(e.ctx, e.queue, "d", []byte("outside"), 0, 0)
	require.NoError(t, err)

	req := o.emitReq(0, true, []persistence.Emit{
		emit("a", e.queue, "x-a", "1"), emit("b", e.queue, "x-b", "1"),
		emit("c", e.queue, "x-c", "1"), emit("d", e.queue, "x-d", "1"),
	}, o.fail("a", "boom", time.Hour))
	req.Skipped = []string{"c"}
	res, err = e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Equal(t, 1, res.Processed)
	require.Equal(t, []string{"d"}, res.Conflicts)
	require.Equal(t, 1, res.Outbox)
	relayed, _ := e.relay()
	require.Equal(t, 1, relayed)
	require.Equal(t, []string{"1"}, e.queued(e.queue, "x-b"))
	for _, id := range []string{"x-a", "x-c", "x-d"} {
		require.Nil(t, e.queued(e.queue, id), id)
	}
}

// §11: a settle under a lost lease (a stale token) commits no emit, and a
// restored batch's emits never appear.
func testOutboxDroppedOnLostLease(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.next(1)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	_, err := e.s.Advance(e.ctx, o.lease, o.emitReq(0, false, []persistence.Emit{emit("a", e.queue, "x", "1")}))
	require.ErrorIs(t, err, persistence.ErrLeaseLost)

	b := e.own(0)
	res, err := e.s.Advance(e.ctx, b.lease, b.emitReq(1, false, nil))
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch), "restored")
	relayed, _ := e.relay()
	require.Zero(t, relayed)
	require.Nil(t, e.queued(e.queue, "x"))
}

// §11: emits committed by an owner that did not relay them (it crashed, or
// lost its shard) are relayed by whoever relays next, the next owner; an
// emit whose target queue does not exist is dropped by the relay.
func testOutboxRelayedByNextOwner(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 2}))
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.next(1)
	res := o.emitting(0, []persistence.Emit{emit("a", "other", "o-1", "x"), emit("a", "other", "o-1", "x"),
		emit("a", "never-registered", "z", "x")})
	require.Equal(t, 3, res.Outbox)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))

	lease, _, err := e.s.AcquireShard(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: 0}, "node-b", time.Minute)
	require.NoError(t, err)
	relayed, dropped, more, err := e.s.RelayOutbox(e.ctx, lease.ShardRef, 0)
	require.NoError(t, err)
	require.False(t, more)
	require.Equal(t, 2, relayed)
	require.Equal(t, 1, dropped)
	require.Equal(t, []string{"x"}, e.queued("other", "o-1"), "equal payloads merge")
}

// §11: an emit to an invalid queue name, with a bad job or beyond the limit
// per id fails the Advance with a *FieldError and changes nothing.
func testOutboxBadEmits(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "1", 1))
	o := e.own(0)
	o.next(1)
	many := make([]persistence.Emit, persistence.MaxEmitsPerID+1)
	for i := range many {
		many[i] = emit("a", e.queue, "x", "1")
	}
	for _, bad := range [][]persistence.Emit{
		{emit("a", "bad queue name!", "x", "1")},
		{emit("a", e.queue, "", "1")},
		many,
	} {
		seq := o.seq
		_, err := e.s.Advance(e.ctx, o.lease, o.emitReq(0, false, bad))
		o.seq = seq
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe)
	}
	res := o.emitting(0, nil)
	require.Equal(t, 1, res.Processed, "the batch was still in flight")
}
