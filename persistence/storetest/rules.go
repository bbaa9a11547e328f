package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// This file holds the rules that make exclusivity and order hold through
// faults (SPEC 2.5, 2.6, 3.1 and the deadlines of section 6), and the
// upgrade from the previous storage layout.

// payloadData returns the payloads' bytes as strings, in order.
func payloadData(ps []persistence.Payload) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p.Data)
	}
	return out
}

// jobOf returns the job of id in a batch, or nil.
func jobOf(b *persistence.Batch, id string) *persistence.Job {
	if b == nil {
		return nil
	}
	for i := range b.Jobs {
		if b.Jobs[i].ID == id {
			return &b.Jobs[i]
		}
	}
	return nil
}

// SPEC 3.1: payloads without a score keep the order in which they were
// sent, within one call and across calls, even when the clock does not
// move between them (the README's snippet sends z-created, a-paid,
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

// SPEC 3.3 with the store's own clock: due times are compared with the
// store's time (Redis TIME), not with the clock of the node that calls.
// A node whose clock ran 15 minutes ahead used to fetch a job due in ten
// minutes at once, and to stamp default perform_at and scores with its
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

// SPEC 2.5: an acquisition's epoch is greater than every epoch issued
// before, also when the store lost its last writes (the lease and the
// epoch counter with them), and the stale owner's calls are refused.
func testEpochsGrowAfterLostWrites(t *testing.T, h Harness) {
	if h.Lossy == nil {
		t.Skip("the harness cannot make its server lose writes")
	}
	clk := clock.NewSimulated(epoch)
	s, save, lose := h.Lossy(t, clk.Now)
	ctx := context.Background()
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{job("a", "v", 1)}))
	save()

	var a persistence.Lease
	for i := range 3 { // a busy shard: acquisitions the store will forget
		if i > 0 {
			require.NoError(t, s.ReleaseShard(ctx, a))
		}
		l, _, err := s.AcquireShard(ctx, ref, "node-a", time.Minute)
		require.NoError(t, err)
		require.Greater(t, l.Epoch, a.Epoch)
		a = l
	}
	res, err := s.Advance(ctx, a, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))

	lose() // back to the state before the acquisitions: no lease, an older epoch

	b, _, err := s.AcquireShard(ctx, ref, "node-a", time.Minute)
	require.NoError(t, err, "the lease was lost with the writes")
	require.Greater(t, b.Epoch, a.Epoch, "epochs only grow")
	require.NotEqual(t, a.Token, b.Token)
	_, err = s.Advance(ctx, a, persistence.AdvanceRequest{Fetch: 1, NextSeq: 2, MaxRetryCount: 25})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "the forgotten owner is fenced")
	res, err = s.Advance(ctx, b, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
}

// SPEC 2.5: two acquisitions never yield the same token, not even by the
// same owner name.
func testTokensNeverReissued(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	seen := map[string]bool{}
	var last int64
	for range 20 {
		l, _, err := e.s.AcquireShard(e.ctx, ref, "same-name", time.Minute)
		require.NoError(t, err)
		require.False(t, seen[l.Token], "token %s issued twice", l.Token)
		seen[l.Token] = true
		require.Greater(t, l.Epoch, last)
		last = l.Epoch
		require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	}
}

// SPEC 2.6: a batch holds at most max_payloads_per_call payloads of one
// id, the lowest-scored; the rest stay queued, in order, and come in later
// calls. Other ids of the shard are served in the same windows.
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

// SPEC 2.6: one id with 200,000 payloads drains in capped, ordered calls;
// no call (fetch, restore, failure, queue action, morgue move) handles
// more than one call's worth of its payloads, and the shard's other ids are
// served meanwhile.
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
	killed, err := e.s.KillFailed(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1, killed)
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, n, page.Entries[0].PayloadCount)
	requeued, err := e.s.RequeueMorgueAll(e.ctx, e.queue)
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

// SPEC 3.5: what a settlement moved to the morgue is reported again when
// the Advance is retried after its reply was lost, so that the
// retries_exhausted hook sees it at least once; the next call confirms it.
func testDeadListOnRetriedAdvance(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "va", 1), job("b", "vb", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 2, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 2)

	// Settle only, failing a: retried, the report is the same.
	e.enqueue(job("c", "vc", 1))
	settle := persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "a", Error: "dead a"}}}
	for attempt := range 2 {
		res, err = e.s.Advance(e.ctx, l, settle)
		require.NoError(t, err)
		require.Len(t, res.Dead, 1, "attempt %d", attempt)
		require.Equal(t, "a", res.Dead[0].ID)
		require.Equal(t, []string{"va"}, payloadData(res.Dead[0].Payloads))
		require.Equal(t, "dead a", res.Dead[0].Error)
		require.Equal(t, 1, res.Processed)
		require.Equal(t, 1, res.Failed)
	}
	// Settle and fetch in one call: the batch and the report come back.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 3, Fetch: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Empty(t, res.Dead, "a new call confirmed the last report")
	require.Equal(t, []string{"c"}, ids(res.Batch))
	e.enqueue(job("d", "vd", 1))
	req := persistence.AdvanceRequest{Settle: 3, NextSeq: 4, Fetch: 1, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "c", Error: "dead c"}}}
	for attempt := range 2 {
		res, err = e.s.Advance(e.ctx, l, req)
		require.NoError(t, err)
		require.Equal(t, []string{"d"}, ids(res.Batch), "attempt %d", attempt)
		require.Len(t, res.Dead, 1, "attempt %d", attempt)
		require.Equal(t, "c", res.Dead[0].ID)
	}
	st := e.stats()
	require.EqualValues(t, 2, st.MorgueLength)
	require.EqualValues(t, 2, st.Failed, "nothing settled twice")
}

// docs/contract.md §3.5: the retries_exhausted hook sees what went to the
// morgue at least once, even when the owner that moved it never received the
// reply and then lost its lease: the next owner's first Advance reports it
// (again on a retry of that call), and a later call confirms it.
func testDeadListHandedToNextOwner(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "va", 1), job("b", "vb", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	la, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", 300*time.Millisecond)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, la, persistence.AdvanceRequest{NextSeq: 1, Fetch: 2, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 2)
	// a dies; node-a never sees the reply and never calls again.
	_, err = e.s.Advance(e.ctx, la, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "a", Error: "dead a"}}})
	require.NoError(t, err)

	var lb persistence.Lease
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		lb, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	e.enqueue(job("c", "vc", 1))
	first := persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 0}
	for attempt := range 2 {
		res, err = e.s.Advance(e.ctx, lb, first)
		require.NoError(t, err)
		require.Len(t, res.Dead, 1, "attempt %d: the previous owner's dead report", attempt)
		require.Equal(t, "a", res.Dead[0].ID)
		require.Equal(t, []string{"va"}, payloadData(res.Dead[0].Payloads))
		require.Equal(t, "dead a", res.Dead[0].Error)
		require.Equal(t, []string{"c"}, ids(res.Batch), "attempt %d", attempt)
	}
	// node-b's own failure is reported with nothing of node-a's.
	res, err = e.s.Advance(e.ctx, lb, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 1, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "c", Error: "dead c"}}})
	require.NoError(t, err)
	require.Len(t, res.Dead, 1)
	require.Equal(t, "c", res.Dead[0].ID)
	res, err = e.s.Advance(e.ctx, lb, persistence.AdvanceRequest{Settle: 2, NextSeq: 3, Fetch: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Empty(t, res.Dead, "a new call confirmed the report")
	require.NoError(t, e.s.ReleaseShard(e.ctx, lb))
	lc, _, err := e.s.AcquireShard(e.ctx, ref, "node-c", time.Minute)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, lc, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	require.Empty(t, res.Dead, "a confirmed report is not handed over")
	require.EqualValues(t, 2, e.stats().MorgueLength)
}

// SPEC 6 (Orderly-Deadline): each call's deadline is kept with the
// in-flight record, and ids restored from it are not fetched again before
// it; ids whose call a stop cut while it ran wait the same way, ids that
// were skipped before their call started do not.
func testDeadlineKeptOnRestore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 3, MaxRetryCount: 25,
		CallTimeout: 30 * time.Second, CallSize: 1})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 3)
	procs, err := e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, procs[0].Deadline.Equal(epoch.Add(90*time.Second)), "three calls of 30 s: deadline bound %v", procs[0].Deadline)

	// The owner goes away 5 s later: its calls end by min(bound, now + 30 s).
	e.clock.Advance(5 * time.Second)
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	l, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch, "no call before the restored calls' deadline")
	require.True(t, res.NextDue.Equal(epoch.Add(35*time.Second)), "next due %v", res.NextDue)
	require.True(t, e.get("a").PerformAt.Equal(epoch), "perform_at is unchanged")
	_, err = e.s.PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 2, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch, "perform all now does not cut a deadline short")

	e.clock.Advance(30 * time.Second)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 3, Fetch: 10, MaxRetryCount: 25,
		CallTimeout: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, ids(res.Batch))

	// A stop cut a's call while it ran; b's call never started; c succeeded.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 3, NextSeq: 4, Fetch: 10, MaxRetryCount: 25,
		Interrupted: []string{"a"}, Skipped: []string{"b"}})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, ids(res.Batch), "a skipped id goes back at once")
	require.Equal(t, 2, res.Restored)
	require.Equal(t, 1, res.Processed)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 4, NextSeq: 5, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(epoch.Add(45*time.Second)), "the cut call ends by its deadline: next due %v", res.NextDue)
	e.clock.Advance(10 * time.Second)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 6, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
}

// A long window bounded by time: with MaxCalls the deadline bound counts at
// most MaxCalls calls, so a restore holds its ids no longer than a window of
// MaxCalls calls would (docs/storage.md §4).
func testDeadlineMaxCalls(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1), job("d", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", 10*time.Minute)
	require.NoError(t, err)
	res, err := e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 4, MaxRetryCount: 25,
		CallTimeout: 30 * time.Second, CallSize: 1, MaxCalls: 2})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 4)
	procs, err := e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, procs[0].Deadline.Equal(epoch.Add(60*time.Second)), "four calls, at most two counted: deadline bound %v", procs[0].Deadline)

	// Fewer calls than MaxCalls count as they are.
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 4, MaxRetryCount: 25,
		Skipped: []string{"a"}, CallTimeout: 30 * time.Second, CallSize: 1, MaxCalls: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	procs, err = e.s.Processing(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, procs[0].Deadline.Equal(epoch.Add(30*time.Second)), "one call: deadline bound %v", procs[0].Deadline)

	// The owner goes away: the restored id waits for the capped bound.
	e.clock.Advance(5 * time.Second)
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	l, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", 10*time.Minute)
	require.NoError(t, err)
	res, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Nil(t, res.Batch)
	require.True(t, res.NextDue.Equal(epoch.Add(30*time.Second)), "next due %v", res.NextDue)
}

// A node renews its leases together; each is fenced on its own.
func testRenewShards(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	var leases []persistence.Lease
	for sh := range 3 {
		l, _, err := e.s.AcquireShard(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: sh}, "node-a", time.Second)
		require.NoError(t, err)
		leases = append(leases, l)
	}
	require.NoError(t, e.s.ReleaseShard(e.ctx, leases[2]))
	errs := e.s.RenewShards(e.ctx, leases, time.Minute)
	require.Len(t, errs, 3)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], persistence.ErrLeaseLost)
	h.Elapse(t, 1200*time.Millisecond)
	for sh := range 2 {
		_, _, err := e.s.AcquireShard(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: sh}, "node-b", time.Minute)
		require.ErrorIs(t, err, persistence.ErrLeaseHeld, "shard %d renewed", sh)
	}
	require.Empty(t, slices.DeleteFunc(e.s.RenewShards(e.ctx, nil, time.Minute), func(err error) bool { return err == nil }))
}

// Upgrade: a store the previous release's nodes wrote (queued, delayed,
// retrying, in-flight and morgue jobs, counters) is served by this release
// without losing anything; layout 1 nodes are fenced out of a shard once a
// new node served it; what they enqueue meanwhile is drained in order; and
// while a shard is still served by a layout 1 node, new nodes enqueue where
// that node reads.
func testUpgrade(t *testing.T, h Harness) {
	if h.Upgrade == nil {
		t.Skip("the harness has no store of the previous layout")
	}
	clk := clock.NewSimulated(epoch)
	old, cur := h.Upgrade(t, clk.Now)
	ctx := context.Background()
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	at := func(d time.Duration) time.Time { return clk.Now().Add(d) }
	mk := func(id, payload string, score float64, d time.Duration) persistence.NewJob {
		j := job(id, payload, score)
		j.PerformAt = at(d)
		return j
	}
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	require.NoError(t, old.Enqueue(ctx, "q", []persistence.NewJob{
		mk("m1", "dies", 1, -5*time.Second), mk("r1", "retries", 1, -4*time.Second),
		mk("d1", "done", 1, -3*time.Second), mk("f1", "in flight", 1, -2*time.Second),
		mk("q1", "one", 1, 0), mk("q1", "two", 2, 0), mk("w1", "later", 1, time.Hour),
	}))
	// Layout 1 at work: m1 dies, r1 fails, d1 succeeds, f1 is in flight
	// when its owner disappears.
	lo, _, err := old.AcquireShard(ctx, ref, "old-node", time.Second)
	require.NoError(t, err)
	step := func(settle, next int64, maxRetry int, fails ...persistence.Failure) persistence.AdvanceResult {
		t.Helper()
		res, err := old.Advance(ctx, lo, persistence.AdvanceRequest{Settle: settle, NextSeq: next, Fetch: 1, MaxRetryCount: maxRetry, Failures: fails})
		require.NoError(t, err)
		return res
	}
	require.Equal(t, []string{"m1"}, ids(step(0, 1, 0).Batch))
	res := step(1, 2, 0, persistence.Failure{ID: "m1", Error: "gone"})
	require.Len(t, res.Dead, 1)
	require.Equal(t, []string{"r1"}, ids(res.Batch))
	require.Equal(t, []string{"d1"}, ids(step(2, 3, 25, persistence.Failure{ID: "r1", Error: "later", RetryAt: at(time.Minute)}).Batch))
	require.Equal(t, []string{"f1"}, ids(step(3, 4, 25).Batch))

	// A node of this release reads it all.
	require.NoError(t, cur.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	st, err := cur.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 3, st[0].Length, "q1, r1, w1")
	require.EqualValues(t, 1, st[0].Retries)
	require.EqualValues(t, 1, st[0].MorgueLength)
	require.EqualValues(t, 1, st[0].Busy)
	require.EqualValues(t, 1, st[0].Processed)
	require.EqualValues(t, 2, st[0].Failed)
	info, err := cur.GetJob(ctx, "q", "q1")
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, payloadData(info.Queued.Payloads))
	// A shard held by a node of the previous release shows that node as its
	// owner (on a queue of its own, under a lease that outlives the other
	// cases' clock jumps on a shared embedded store).
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "held", Shards: 1}))
	lh, _, err := old.AcquireShard(ctx, persistence.ShardRef{Queue: "held", Shard: 0}, "old-node", 10*time.Minute)
	require.NoError(t, err)
	owners, err := cur.ShardOwners(ctx, "held")
	require.NoError(t, err)
	require.Equal(t, "old-node", owners[0].Owner, "a node of the previous release shows as the shard's owner")
	require.Equal(t, lh.Epoch, owners[0].Epoch)
	require.NoError(t, old.ReleaseShard(ctx, lh))

	// It takes the shard over once the old owner's lease ran out, restoring
	// the old owner's in-flight batch.
	_, _, err = cur.AcquireShard(ctx, ref, "new-node", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "the layout 1 owner's lease is respected")
	var ln persistence.Lease
	var restored int
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		ln, restored, err = cur.AcquireShard(ctx, ref, "new-node", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, restored)

	// Layout 1 nodes cannot serve the shard any more; what they enqueue
	// meanwhile is drained, older payloads first.
	require.ErrorIs(t, old.ReleaseShard(ctx, lo), persistence.ErrLeaseLost, "the old lease is gone")
	_, _, err = old.AcquireShard(ctx, ref, "old-node", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "layout 1 nodes are fenced out")
	owners, err = cur.ShardOwners(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, "new-node", owners[0].Owner, "the fence is not an owner")
	require.NoError(t, cur.ReleaseShard(ctx, ln))
	owners, err = cur.ShardOwners(ctx, "q")
	require.NoError(t, err)
	require.Empty(t, owners[0].Owner, "a fenced shard without a layout 2 lease is free")
	ln, _, err = cur.AcquireShard(ctx, ref, "new-node", time.Minute)
	require.NoError(t, err)
	require.NoError(t, old.Enqueue(ctx, "q", []persistence.NewJob{job("q1", "three-via-old", 3), job("n1", "new-via-old", 1)}))
	require.NoError(t, cur.Enqueue(ctx, "q", []persistence.NewJob{job("q1", "four-via-new", 4)}))

	got := map[string][]string{}
	rc := map[string]int{}
	var order []string
	seq, settle := int64(0), int64(0)
	drain := func() {
		for range 100 {
			seq++
			res, err := cur.Advance(ctx, ln, persistence.AdvanceRequest{Settle: settle, NextSeq: seq, Fetch: 10, MaxRetryCount: 25})
			require.NoError(t, err)
			if res.Batch == nil && !res.More {
				return
			}
			settle = 0
			if res.Batch != nil {
				settle = res.Batch.Seq
				for _, j := range res.Batch.Jobs {
					got[j.ID] = append(got[j.ID], payloadData(j.Payloads)...)
					rc[j.ID] = j.RetryCount
					order = append(order, j.ID)
				}
			}
		}
		t.Fatal("the shard did not drain")
	}
	drain()
	clk.Advance(2 * time.Hour)
	drain()
	require.Equal(t, []string{"one", "two", "three-via-old", "four-via-new"}, got["q1"], "older payloads first, in score order (fetched: %v)", order)
	require.Equal(t, []string{"in flight"}, got["f1"])
	require.Equal(t, []string{"new-via-old"}, got["n1"])
	require.Equal(t, []string{"retries"}, got["r1"])
	require.Equal(t, 0, rc["r1"], "the retry count survives")
	require.Equal(t, []string{"later"}, got["w1"])
	require.Len(t, order, 5, "each id once: %v", order)
	page, err := cur.ListMorgue(ctx, "q", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "m1", page.Entries[0].ID)
	require.Equal(t, []string{"dies"}, payloadData(page.Entries[0].Payloads))
	require.Equal(t, "gone", page.Entries[0].Error)
	st, err = cur.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 0, st[0].Length)
	require.EqualValues(t, 0, st[0].Busy)
	require.EqualValues(t, 1+5, st[0].Processed)
	require.EqualValues(t, 2, st[0].Failed)

	// A shard a layout 1 node still serves: new nodes enqueue where it
	// reads, so that nothing waits behind it and nothing comes out of order.
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "roll", Shards: 1}))
	require.NoError(t, cur.RegisterQueue(ctx, persistence.QueueSpec{Name: "roll", Shards: 1}))
	lr, _, err := old.AcquireShard(ctx, persistence.ShardRef{Queue: "roll"}, "old-node", time.Minute)
	require.NoError(t, err)
	require.NoError(t, old.Enqueue(ctx, "roll", []persistence.NewJob{job("x", "x1-via-old", 1)}))
	require.NoError(t, cur.Enqueue(ctx, "roll", []persistence.NewJob{job("x", "x2-via-new", 2)}))
	res, err = old.Advance(ctx, lr, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, ids(res.Batch))
	require.Equal(t, []string{"x1-via-old", "x2-via-new"}, payloadData(res.Batch.Jobs[0].Payloads))
	_, _, err = cur.AcquireShard(ctx, persistence.ShardRef{Queue: "roll"}, "new-node", time.Minute)
	require.True(t, errors.Is(err, persistence.ErrLeaseHeld))
}
