package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Online resharding (docs/contract.md §3.17).

var reshardTests = []testCase{
	{"Reshard_MovesEveryIDWithItsPayloadsInOrder", testReshardMoves, needReshard},
	{"Reshard_EnqueuesDuringTheDrainKeepOrder", testReshardEnqueueDuring, needReshard},
	{"Reshard_KeepsRetryCountErrorAndCounters", testReshardKeepsRetries, needReshard},
	{"Reshard_StateTimersMorgueAndDedupMove", testReshardStateful, needReshard | needState | needAdmin},
	{"Reshard_OneAtATimeAndBackAgain", testReshardOneAtATime, needReshard},
	{"Reshard_MovesTheFirstDueFirst", testReshardFirstDueFirst, needReshard},
	{"Reshard_RelaysTheOutboxFirst", testReshardOutboxFirst, needReshard | needFeed},
	{"Reshard_ListingsShowEveryIDOnce", testReshardListingsWhole, needReshard | needAdmin | needFinished},
}

// resharder returns the store's Resharder role (the case declared
// needReshard).
func (e *env) resharder() persistence.Resharder {
	e.t.Helper()
	require.NotZero(e.t, e.h.needs&needReshard, "the case calls Resharder without declaring needReshard")
	return e.s.(persistence.Resharder)
}

// reshard starts a reshard to n shards and checks the shape it reports.
func (e *env) reshard(n int) persistence.QueueShape {
	e.t.Helper()
	sh, err := e.resharder().Reshard(e.ctx, e.queue, n)
	require.NoError(e.t, err)
	require.True(e.t, sh.Resharding())
	require.Equal(e.t, n, sh.Current.Count)
	return sh
}

// drainer drives a shard of the drained generation as its owner would.
type drainer struct {
	o *owner
}

func (e *env) drainer(shard int) *drainer {
	e.t.Helper()
	o := e.own(shard)
	res := o.next(0)
	require.True(e.t, res.Draining, "a shard being drained says so to its owner")
	require.Nil(e.t, res.Batch)
	return &drainer{o: o}
}

// step runs one DrainShard step of up to limit ids.
func (d *drainer) step(limit int) persistence.DrainResult {
	d.o.e.t.Helper()
	r, err := d.o.e.resharder().DrainShard(d.o.e.ctx, d.o.lease, limit)
	require.NoError(d.o.e.t, err)
	require.Zero(d.o.e.t, r.Outbox)
	return r
}

// all drains the shard to the end.
func (d *drainer) all(limit int) {
	d.o.e.t.Helper()
	for range 100000 {
		if d.step(limit).Done {
			res := d.o.next(0)
			require.True(d.o.e.t, res.Moved, "a drained shard says so to its owner")
			require.NoError(d.o.e.t, d.o.e.s.ReleaseShard(d.o.e.ctx, d.o.lease))
			return
		}
	}
	d.o.e.t.Fatal("the shard was not drained")
}

// drainAll drains every shard of sh.From and ends the reshard.
func (e *env) drainAll(sh persistence.QueueShape, limit int) {
	e.t.Helper()
	for _, ref := range sh.From.Refs(e.queue) {
		e.drainer(ref.Shard).all(limit)
	}
	done, err := e.resharder().FinishReshard(e.ctx, e.queue)
	require.NoError(e.t, err)
	require.True(e.t, done)
	got, err := e.resharder().Shape(e.ctx, e.queue)
	require.NoError(e.t, err)
	require.Equal(e.t, persistence.QueueShape{Current: sh.Current}, got)
}

// collect processes every due job of the shards of r and returns each id's
// payloads in the order handed out ("data@score").
func (e *env) collect(r persistence.ShardRange, into map[string][]string) map[string][]string {
	e.t.Helper()
	if into == nil {
		into = map[string][]string{}
	}
	for _, ref := range r.Refs(e.queue) {
		o := e.own(ref.Shard)
		for {
			res := o.next(50)
			if res.Batch == nil {
				break
			}
			for _, j := range res.Batch.Jobs {
				require.Equal(e.t, r.Shard(j.ID), ref.Shard, "id %s is in its shard", j.ID)
				into[j.ID] = append(into[j.ID], pl(j.Payloads)...)
			}
		}
		require.NoError(e.t, e.s.ReleaseShard(e.ctx, o.lease))
	}
	return into
}

func testReshardMoves(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	want := map[string][]string{}
	var jobs []persistence.NewJob
	for i := range 120 {
		id := fmt.Sprintf("id-%03d", i)
		for k, p := range []string{"a", "b", "c"} {
			j := job(id, p, float64(k+1))
			if i%10 == 0 {
				j.PerformAt = e.at(time.Hour)
			}
			if i%15 == 1 {
				j.Priority = 3
			}
			if i%7 == 2 && k == 1 {
				j.Headers = map[string]string{"h": id}
			}
			jobs = append(jobs, j)
			want[id] = append(want[id], p+"@"+trimFloat(float64(k+1)))
		}
	}
	big := 150
	if h.Light {
		big = 80
	}
	for k := range big {
		jobs = append(jobs, job("big", fmt.Sprintf("p%03d", k), float64(k)))
		want["big"] = append(want["big"], fmt.Sprintf("p%03d@%d", k, k))
	}
	e.enqueue(jobs...)

	sh := e.reshard(7)
	require.Equal(t, persistence.QueueShape{
		Current: persistence.ShardRange{Gen: 2, Base: 4, Count: 7},
		From:    persistence.ShardRange{Gen: 1, Base: 0, Count: 4},
	}, sh)
	e.drainAll(sh, 9)
	e.clock.Advance(2 * time.Hour)

	// Headers moved with their payloads.
	info, err := e.s.GetJob(e.ctx, e.queue, "id-002")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"h": "id-002"}, info.Queued.Payloads[1].Headers)
	st := e.stats()
	require.Equal(t, 7, st.Shards)
	require.Equal(t, 4, st.FirstShard)
	require.Len(t, st.ShardLag, 7)
	require.EqualValues(t, 121, st.Length)

	require.Equal(t, want, e.collect(sh.Current, nil))
	st = e.stats()
	require.Zero(t, st.Length)
	require.EqualValues(t, 121, st.Processed)
}

// Jobs enqueued while a shard is drained go to its old shard until it is
// drained, then to the new one; each id's payloads are handed out in score
// order across the move, default scores included (they keep send order).
func testReshardEnqueueDuring(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%02d", i)
	}
	send := func(payload string) {
		var jobs []persistence.NewJob
		for _, id := range ids {
			jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte(payload)})
		}
		e.enqueue(jobs...)
	}
	// Payload bytes sort against send order: only the scores keep it.
	send("z0")
	sh := e.reshard(3)
	d0 := e.drainer(0)
	require.Equal(t, 5, d0.step(5).Moved)
	status, err := e.resharder().ReshardStatus(e.ctx, e.queue)
	require.NoError(t, err)
	require.EqualValues(t, 5, status.Moved)
	require.EqualValues(t, len(ids)-5, status.Left)
	got := e.collect(sh.Current, nil) // the moved ids run at once
	send("y1")
	d0.all(5)
	send("x2")
	d1 := e.drainer(1)
	d1.step(3)
	send("w3")
	d1.all(50)
	status, err = e.resharder().ReshardStatus(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 2, status.Drained)
	done, err := e.resharder().FinishReshard(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, done)
	send("v4")
	e.collect(sh.Current, got)
	for _, id := range ids {
		var data []string
		for _, p := range got[id] {
			data = append(data, p[:2])
		}
		require.Equal(t, []string{"z0", "y1", "x2", "w3", "v4"}, data, id)
	}
}

func testReshardKeepsRetries(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	e.enqueue(job("r", "a", 1), job("ok", "b", 1))
	home := persistence.ShardOf("r", 2)
	o := e.own(home)
	res := o.next(10)
	require.NotNil(t, res.Batch)
	var fails []persistence.Failure
	for _, j := range res.Batch.Jobs {
		if j.ID == "r" {
			fails = append(fails, o.fail("r", "boom", time.Minute))
		}
	}
	o.next(0, fails...)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	before := e.stats()

	sh := e.reshard(3)
	e.drainAll(sh, 1)
	info, err := e.s.GetJob(e.ctx, e.queue, "r")
	require.NoError(t, err)
	require.Equal(t, 0, info.Queued.RetryCount)
	require.Equal(t, "boom", info.Queued.Error)
	require.WithinDuration(t, e.at(time.Minute), info.Queued.PerformAt, time.Millisecond)
	after := e.stats()
	require.Equal(t, before.Processed, after.Processed, "the counters move with the shards")
	require.Equal(t, before.Failed, after.Failed)
	require.Equal(t, before.Length, after.Length)
	require.EqualValues(t, 1, after.Retries)
}

func testReshardStateful(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 2, Stateful: true, DedupWindow: time.Hour}))
	v, err := e.states().SetState(e.ctx, e.queue, "s1", []byte("state-1"), 0, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, v)
	// A timer, set by a handler call of t1.
	e.enqueue(job("t1", "x", 1))
	o := e.own(persistence.ShardOf("t1", 2))
	res := o.next(10)
	require.Equal(t, []string{"t1"}, ids(res.Batch))
	_, err = e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{
		Settle: res.Batch.Seq, NextSeq: o.seq + 1, MaxRetryCount: 25, Stateful: true,
		TimerWrites: []persistence.TimerWrite{{ID: "t1", At: e.at(time.Hour)}},
	})
	require.NoError(t, err)
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	// A morgue entry and a dedup key.
	e.enqueue(job("m1", "dead", 1))
	killed, err := e.admin().KillJob(e.ctx, e.queue, "m1")
	require.NoError(t, err)
	require.True(t, killed)
	k := job("d1", "once", 1)
	k.DedupKey = "key-1"
	e.enqueueDups(0, k)

	sh := e.reshard(5)
	e.drainAll(sh, 2)

	st, err := e.states().GetState(e.ctx, e.queue, "s1")
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Version)
	require.Equal(t, "state-1", string(st.Data))
	info, err := e.s.GetJob(e.ctx, e.queue, "t1")
	require.NoError(t, err)
	require.WithinDuration(t, e.at(time.Hour), info.Timer, time.Millisecond)
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "m1", page.Entries[0].ID)
	require.Equal(t, []string{"dead"}, payloadData(page.Entries[0].Payloads))
	e.enqueueDups(1, k) // still a duplicate in its new shard
	_, err = e.states().SetState(e.ctx, e.queue, "s1", []byte("state-2"), 1, 0)
	require.NoError(t, err)
}

// One reshard at a time; a queue may be resharded again once the last one
// ended, down as well as up, and shard numbers are reused.
func testReshardOneAtATime(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	e.enqueue(job("a", "1", 1), job("b", "2", 1), job("c", "3", 1))
	sh := e.reshard(5)
	_, err := e.resharder().Reshard(e.ctx, e.queue, 6)
	require.ErrorIs(t, err, persistence.ErrReshardRunning)
	again, err := e.resharder().Reshard(e.ctx, e.queue, 5)
	require.NoError(t, err, "asking again for the running reshard is no error")
	require.Equal(t, sh, again)
	// A node (re)started with either count serves the queue's shape: the
	// configuration's count no longer decides once a reshard started.
	for _, n := range []int{3, 5, 4} {
		require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: n}), "registered with %d shards while resharding", n)
	}
	got, err := e.resharder().Shape(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, sh, got, "registering changes no shape")
	done, err := e.resharder().FinishReshard(e.ctx, e.queue)
	require.NoError(t, err)
	require.False(t, done, "nothing drained yet")
	status, err := e.resharder().ReshardStatus(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, persistence.ReshardStatus{Shape: sh, Left: 3}, status)
	e.drainAll(sh, 10)
	status, err = e.resharder().ReshardStatus(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, persistence.ReshardStatus{Shape: persistence.QueueShape{Current: sh.Current}}, status)

	down := e.reshard(2)
	require.Equal(t, persistence.ShardRange{Gen: 3, Base: 0, Count: 2}, down.Current, "down to the lowest free numbers")
	e.drainAll(down, 10)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 3}), "registered with the first count after reshards")
	e.enqueue(job("a", "4", 2))
	require.Equal(t, map[string][]string{"a": {"1@1", "4@2"}, "b": {"2@1"}, "c": {"3@1"}}, e.collect(down.Current, nil))
	specs, err := e.s.Queues(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []persistence.QueueSpec{{Name: e.queue, Shards: 2}}, specs)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "other", Shards: 4}))
	shapes, err := e.resharder().Shapes(e.ctx, "other", e.queue)
	require.NoError(t, err)
	require.Equal(t, []persistence.QueueShape{{Current: persistence.ShardRange{Gen: 1, Count: 4}}, {Current: down.Current}}, shapes)
	_, err = e.resharder().Shapes(e.ctx, e.queue, "never")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	// The store's shards win over a registration's count once resharded.
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 3}))
	now, err := e.resharder().Shape(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, down.Current, now.Current)
}

// A drained shard's ids move in about the order the shard would have handed
// them out: those due first move first, so that they wait for no more than
// a step of the drain.
func testReshardFirstDueFirst(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	// The delayed ids first, then the due ones latest first: the order in
	// which they were stored is not the order they are due in.
	for i := range 10 {
		later := job(fmt.Sprintf("later-%d", i), "y", 1)
		later.PerformAt = e.at(time.Duration(i+1) * time.Hour)
		e.enqueue(later)
	}
	for i := 9; i >= 0; i-- {
		j := job(fmt.Sprintf("due-%d", i), "x", 1)
		j.PerformAt = e.at(time.Duration(i-20) * time.Second)
		e.enqueue(j)
	}
	sh := e.reshard(2)
	d := e.drainer(0)
	require.Equal(t, 4, d.step(4).Moved)
	got := e.collect(sh.Current, nil)
	require.Len(t, got, 4)
	for id := range got {
		require.True(t, strings.HasPrefix(id, "due-"), "%s moved before ids due earlier", id)
	}
	d.all(3)
}

// A drained shard's outbox is relayed before any of its ids moves, so that
// an id's change feed entries keep their order across the move.
func testReshardOutboxFirst(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	require.NoError(t, e.s.RegisterQueue(e.ctx, persistence.QueueSpec{Name: e.queue, Shards: 1, Stateful: true, FeedMaxLen: 100}))
	e.enqueue(job("a", "x", 1))
	o := e.own(0)
	res, err := e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 25, Stateful: true, FeedMaxLen: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	res, err = e.s.Advance(e.ctx, o.lease, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: 2, MaxRetryCount: 25,
		Stateful: true, FeedMaxLen: 100, StateWrites: []persistence.StateWrite{{ID: "a", Data: []byte("v1")}}})
	require.NoError(t, err)
	require.Positive(t, res.Outbox, "the state change waits in the outbox")
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))

	sh := e.reshard(2)
	d := e.drainer(0)
	r, err := e.resharder().DrainShard(e.ctx, d.o.lease, 10)
	require.NoError(t, err)
	require.Positive(t, r.Outbox, "nothing moves before the outbox is relayed")
	require.Zero(t, r.Moved)
	_, _, _, err = e.s.RelayOutbox(e.ctx, d.o.lease.ShardRef, 100)
	require.NoError(t, err)
	d.all(10)
	done, err := e.resharder().FinishReshard(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, 2, sh.Current.Count)
	entries, _, err := e.feeds().ReadFeed(e.ctx, e.queue, persistence.FeedOldest, 10, 0)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	st, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.EqualValues(t, 1, st.State.Version)
}
