package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// The idle poll (Store.PollShards): a node asks once which of its idle
// shards have work an Advance would find.

var pollTests = []testCase{
	{"Poll_ReportsEveryShardWithWork", testPollReportsWork, needNone},
	{"Poll_IdleShardsNotReported", testPollIdleShards, needNone},
}

// idOn returns an id of the env's queue that lands on shard.
func (e *env) idOn(shard int, tag string) string {
	for i := 0; ; i++ {
		id := tag + "-" + strconv.Itoa(i)
		if persistence.ShardOf(id, e.shards) == shard {
			return id
		}
	}
}

// polled returns the shards of the env's queue that PollShards reports, of
// those named, asked in the order given.
func (e *env) polled(shards ...int) []int {
	e.t.Helper()
	refs := make([]persistence.ShardRef, len(shards))
	for i, sh := range shards {
		refs[i] = persistence.ShardRef{Queue: e.queue, Shard: sh}
	}
	got, err := e.s.PollShards(e.ctx, refs)
	require.NoError(e.t, err)
	require.Len(e.t, got, len(shards))
	var out []int
	for i, w := range got {
		if w {
			out = append(out, shards[i])
		}
	}
	return out
}

// A shard with anything an Advance would hand over or act on is reported:
// a job due when enqueued, a retry once due, a delayed job once due, a
// timer once due, and outbox entries not relayed yet; delayed work is not
// reported before it is due.
func testPollReportsWork(t *testing.T, h Harness) {
	const ready, retry, outbox, timer, delayed, empty = 0, 1, 2, 3, 4, 5
	e := newEnv(t, h, 6)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 1}))
	all := []int{empty, timer, delayed, outbox, retry, ready} // any order
	require.Empty(t, e.polled(all...), "nothing queued yet")

	// A retry due in 10 s.
	id := e.idOn(retry, "r")
	e.enqueue(job(id, "1", 1))
	o := e.own(retry)
	require.Equal(t, []string{id}, ids(o.next(1).Batch))
	o.next(0, o.fail(id, "boom", 10*time.Second))

	// An emit committed with an ack, not relayed.
	id = e.idOn(outbox, "o")
	e.enqueue(job(id, "1", 1))
	o = e.own(outbox)
	require.Equal(t, []string{id}, ids(o.next(1).Batch))
	require.Equal(t, 1, o.emitting(0, []persistence.Emit{emit(id, "other", "x", "1")}).Outbox)

	// A timer due in 10 s (stateful), its job acknowledged.
	id = e.idOn(timer, "t")
	e.enqueue(job(id, "1", 1))
	o = e.own(timer)
	require.Equal(t, []string{id}, ids(o.timers(1, nil).Batch))
	o.timers(0, timerAt(id, e.at(10*time.Second)))
	require.Nil(t, e.get(id))

	// A job delayed by 10 s, and one due now.
	d := job(e.idOn(delayed, "d"), "1", 1)
	d.PerformAt = e.at(10 * time.Second)
	e.enqueue(d, job(e.idOn(ready, "n"), "1", 1))
	e.own(empty)

	require.ElementsMatch(t, []int{outbox, ready}, e.polled(all...))
	e.clock.Advance(10 * time.Second)
	require.ElementsMatch(t, []int{outbox, ready, retry, timer, delayed}, e.polled(all...))
	require.Equal(t, []int{timer}, e.polled(timer), "one shard alone")
	require.Empty(t, e.polled(), "no shard")
}

// A shard whose work is done is not reported, whatever it went through: an
// acknowledged job, a job moved to the morgue (once its owner's next call
// confirmed the dead report), relayed emits, a fired timer; nor is a shard
// nobody served.
func testPollIdleShards(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 1}))

	id := e.idOn(0, "a")
	e.enqueue(job(id, "1", 1))
	o := e.own(0)
	require.Equal(t, []string{id}, ids(o.next(1).Batch))
	require.Nil(t, o.next(1).Batch)

	id = e.idOn(1, "m")
	e.enqueue(job(id, "1", 1))
	o = e.own(1)
	o.maxRetry = 0
	require.Equal(t, []string{id}, ids(o.next(1).Batch))
	require.Len(t, o.next(1, o.fail(id, "boom", 0)).Dead, 1)
	require.Nil(t, o.next(1).Batch)

	id = e.idOn(2, "t")
	e.enqueue(job(id, "1", 1))
	o = e.own(2)
	require.Equal(t, []string{id}, ids(o.timers(1, nil).Batch))
	res, err := e.s.Advance(e.ctx, o.lease, o.emitReq(0, true, []persistence.Emit{emit(id, "other", "x", "1")}))
	require.NoError(t, err)
	require.Equal(t, 1, res.Outbox)
	o.cur = nil
	relayed, _, _, err := e.s.RelayOutbox(e.ctx, o.lease.ShardRef, 0)
	require.NoError(t, err)
	require.Equal(t, 1, relayed)
	e.enqueue(job(id, "2", 1))
	require.Equal(t, []string{id}, ids(o.timers(1, nil).Batch))
	o.timers(0, timerAt(id, e.at(time.Second)))
	e.clock.Advance(time.Second)
	require.Equal(t, []string{id}, ids(o.timers(1, nil).Batch), "the timer fires")
	require.Nil(t, o.timers(1, nil).Batch)

	require.Empty(t, e.polled(0, 1, 2, 3))
	st := e.stats()
	require.EqualValues(t, 1, st.MorgueLength)
	require.Zero(t, st.Length)
}
