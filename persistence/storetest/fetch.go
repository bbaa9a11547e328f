package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Fetch order and bounds (docs/contract.md §3.3, §2.6).

var fetchTests = []testCase{
	{"Rule3_FetchDueInPerformAtOrder", testFetchOrder, needNone},
	{"Rule3_FetchInBatches", testFetchInBatches, needNone},
	{"Rule3_InFlightIDQueuesUp", testInFlightIDQueuesUp, needNone},
	{"Rule3_DueChecksUseTheStoresTime", testDueChecksUseStoreTime, needNone},
	{"Guarantee6_PayloadsPerCallCappedInOrder", testPayloadsPerCallCapped, needNone},
	{"Guarantee6_HotIDDrainsInBoundedCalls", testHotIDBounded, needAdmin},
}

// docs/contract.md §3.3: due ids only, earliest perform_at first, ties by id.
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

// docs/contract.md §3.3: while an id is in flight, new payloads queue up and
// merge; they are handed over in a later batch.
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

// docs/contract.md §3.3 with the store's own clock: due times are compared
// with the store's time (Redis TIME), not with the clock of the node that
// calls. A node whose clock ran 15 minutes ahead used to fetch a job due in
// ten minutes at once, and to stamp default perform_at and scores with its
// clock.
func testDueChecksUseStoreTime(t *testing.T, h Harness) {
	s := h.New(t, nil)
	ctx := context.Background()
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	now := time.Now()
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{
		{ID: "in-10-minutes", PerformAt: now.Add(10 * time.Minute)},
		{ID: "a-second-ago", PerformAt: now.Add(-time.Second)},
		{ID: "default"},
	}))
	info, err := s.GetJob(ctx, "q", "default")
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), info.Queued.PerformAt, 5*time.Second, "default perform_at is the store's time")
	require.InDelta(t, persistence.UnixSeconds(time.Now()), info.Queued.Payloads[0].Score, 5, "default score is the store's time")

	l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q"}, "node-15-minutes-ahead", time.Minute)
	require.NoError(t, err)
	res, err := s.Advance(ctx, l, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a-second-ago", "default"}, ids(res.Batch))
	require.WithinDuration(t, now.Add(10*time.Minute), res.NextDue, time.Millisecond)
	res, err = s.Advance(ctx, l, persistence.AdvanceRequest{Settle: 1, Fetch: 10, NextSeq: 2, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch, "the job due in ten minutes is not fetched")
	require.Equal(t, 2, res.Processed)
}

// docs/contract.md §2.6: a batch holds at most max_payloads_per_call payloads
// of one id, the lowest-scored; the rest stay queued, in order, and come in
// later calls. Other ids of the shard are served in the same windows.
func testPayloadsPerCallCapped(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	var jobs []persistence.NewJob
	for i := 1; i <= 2500; i++ {
		jobs = append(jobs, job("big", fmt.Sprintf("p%04d", i), float64(i)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	e.enqueue(jobs[:1200]...)
	e.enqueue(jobs[1200:]...)
	e.enqueue(job("small", "s", 1))
	want := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("p%04d", i))
		}
		return out
	}
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(t, err)
	adv := func(settle, next int64, fails ...persistence.Failure) persistence.AdvanceResult {
		t.Helper()
		res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: settle, NextSeq: next, Fetch: 10,
			MaxRetryCount: 25, MaxPayloads: 1000, Failures: fails})
		require.NoError(t, err)
		return res
	}

	res := adv(0, 1)
	require.ElementsMatch(t, []string{"big", "small"}, ids(res.Batch), "the small id is served in the same window")
	big := jobOf(res.Batch, "big")
	require.Equal(t, want(1, 1000), payloadData(big.Payloads))
	info, err := e.s.GetJob(e.ctx, e.queue, "big")
	require.NoError(t, err)
	require.NotNil(t, info.InFlight)
	require.Equal(t, 1500, info.Queued.PayloadCount, "the rest stays queued")
	require.Equal(t, "p1001", string(info.Queued.Payloads[0].Data))

	e.enqueue(job("big", "p0000", 0.5)) // lower than all that is left: it comes next
	res = adv(1, 2)
	require.Equal(t, append([]string{"p0000"}, want(1001, 1999)...), payloadData(jobOf(res.Batch, "big").Payloads))
	res = adv(2, 3, persistence.Failure{ID: "big", Error: "boom", RetryAt: e.clock.Now()})
	require.Equal(t, append([]string{"p0000"}, want(1001, 1999)...), payloadData(jobOf(res.Batch, "big").Payloads),
		"a failed call's payloads come back first, in order")
	require.Equal(t, 0, jobOf(res.Batch, "big").RetryCount)
	res = adv(3, 4)
	require.Equal(t, want(2000, 2500), payloadData(jobOf(res.Batch, "big").Payloads))
	res = adv(4, 5)
	require.Nil(t, res.Batch)
	st := e.stats()
	require.EqualValues(t, 0, st.Length)
	require.EqualValues(t, 4, st.Processed)
	require.EqualValues(t, 1, st.Failed)
}

// docs/contract.md §2.6: one id with 200,000 payloads drains in capped,
// ordered calls; no call (fetch, restore, failure, queue action, morgue move)
// handles more than one call's worth of its payloads, and the shard's other
// ids are served meanwhile.
func testHotIDBounded(t *testing.T, h Harness) {
	// The lease outlives the whole rule, which moves 200,000 payloads
	// several times and takes minutes on a loaded machine (under -race, on
	// a Cluster): a lapse would fail it for reasons it does not test.
	const whaleLease = 15 * time.Minute
	n := 200_000
	if h.Light {
		n = 20_000
	}
	e := newEnv(t, h, 1)
	var jobs []persistence.NewJob
	for i := range n {
		jobs = append(jobs, job("whale", fmt.Sprintf("w%06d", i), float64(i)))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	for start := 0; start < n; start += 10_000 {
		e.enqueue(jobs[start:min(start+10_000, n)]...)
	}
	for i := range 5 {
		e.enqueue(job(fmt.Sprintf("minnow-%d", i), "m", 1))
	}
	info, err := e.s.GetJob(e.ctx, e.queue, "whale")
	require.NoError(t, err)
	require.Equal(t, n, info.Queued.PayloadCount)
	require.Len(t, info.Queued.Payloads, persistence.MaxLookupPayloads, "a lookup shows the first payloads only")

	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", whaleLease)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Len(t, jobOf(res.Batch, "whale").Payloads, persistence.DefaultMaxPayloadsPerCall)
	require.Len(t, res.Batch.Jobs, 6, "the minnows come in the whale's first window")

	// A crash: the restore puts back one call's worth of payloads.
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	l, restored, err := e.s.AcquireShard(e.ctx, ref, "node-b", whaleLease)
	require.NoError(t, err)
	require.Zero(t, restored, "release restored it")

	// A failure merges back one call's worth (the minnows, restored too, go
	// through).
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 6)
	require.Equal(t, "w000000", string(jobOf(res.Batch, "whale").Payloads[0].Data))
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 0, MaxRetryCount: 25,
		Failures: []persistence.Failure{{ID: "whale", Error: "boom", RetryAt: e.clock.Now()}}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Failed)

	// Kill it (retry count 0): the morgue move runs in bounded calls, then
	// requeue it from the morgue the same way.
	killed, err := e.admin().KillFailed(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1, killed)
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, n, page.Entries[0].PayloadCount)
	requeued, err := e.admin().RequeueMorgueAll(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1, requeued)

	// Drain: every call holds at most 1000 of its payloads, in order.
	next, seq := 0, int64(2)
	var settle int64
	for {
		seq++
		res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: settle, NextSeq: seq, Fetch: 10, MaxRetryCount: 25})
		require.NoError(t, err)
		if res.Batch == nil {
			break
		}
		settle = res.Batch.Seq
		w := jobOf(res.Batch, "whale")
		if w == nil {
			continue
		}
		require.LessOrEqual(t, len(w.Payloads), persistence.DefaultMaxPayloadsPerCall)
		for _, p := range w.Payloads {
			require.Equal(t, fmt.Sprintf("w%06d", next), string(p.Data), "payloads in score order across calls")
			next++
		}
	}
	require.Equal(t, n, next)
	require.Nil(t, e.get("whale"))
}
