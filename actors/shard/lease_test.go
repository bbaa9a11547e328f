package shard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/internal/shardctx"
	"github.com/orderlyhq/orderly/persistence"
)

// A node paused (SIGSTOP, a GC pause, a frozen VM) in the middle of a
// prefetched window resumes past its lease: the next call of the window
// must not start, even though the lease guard's timer has not fired yet
// (timers of a paused process fire late). The batch is not settled; the
// next owner restores it.
func TestPausedNodeStartsNoFurtherCallOfAPrefetchedWindow(t *testing.T) {
	t.Parallel()
	renewModes(t, func(t *testing.T, batched bool) {
		store := &fakeStore{jobs: jobs("a", "b", "c")}
		h := newHarness(t, store)
		h.batched = batched
		h.prefetch = 3
		var mu sync.Mutex
		var called []string
		h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
			mu.Lock()
			called = append(called, b.Jobs[0].ID)
			mu.Unlock()
			if b.Jobs[0].ID == "a" {
				h.clock.Jump(10 * time.Second) // frozen during the call, longer than LeaseTTL
			}
			return nil, nil
		})
		h.eventually("lease counted as lost", func() bool { return h.obs.losses() == 1 })
		h.eventually("not serving", func() bool { return !h.serving() })
		h.advanceTo(12 * time.Second) // the late timers (renewal, guard) fire now
		mu.Lock()
		require.Equal(t, []string{"a"}, called, "no call starts after the lease could have expired")
		mu.Unlock()
		for _, r := range store.requests() {
			require.Zero(t, r.Settle, "a batch under a lost lease is not settled: the next owner restores it")
		}
	})
}

// S4: a renewal whose reply comes after the guard counted the lease as lost
// does not revive it; the actor gives the lease back instead (Redis holds it
// for another LeaseTTL, which would keep the next owner waiting). Both
// orders: the guard timer fired before the reply, or the process was paused
// and the reply is handled before the late guard timer.
func TestLateRenewalReplyDoesNotReviveTheLease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		pause func(h *harness)
	}{
		{"guard fired first", func(h *harness) { h.advanceTo(2500 * time.Millisecond) }},
		{"paused past the guard", func(h *harness) { h.clock.Jump(3 * time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			renewModes(t, func(t *testing.T, batched bool) {
				gate := make(chan struct{})
				store := &fakeStore{jobs: jobs("a"), renewGate: gate}
				h := newHarness(t, store)
				h.batched = batched
				process, calls := blocking(h.clock, false, nil)
				h.start(process)
				c := wait(h, calls, "the handler call")
				h.eventually("serving", h.serving)

				h.armedAt(time.Second)
				h.advanceTo(time.Second)
				h.eventually("renewal sent", func() bool { return store.count("renew") == 1 })
				tc.pause(h)
				store.set(func(s *fakeStore) { s.renewGate = nil })
				gate <- struct{}{} // the renewal succeeds, late

				wait(h, c.cancelled, "the cancellation")
				require.EqualError(t, c.cause, "shard lease lost")
				h.eventually("the renewed lease given back", func() bool { return store.count("release") == 1 })
				require.Equal(t, 1, h.obs.losses())
				// The actor reports to its parent by message: the report
				// of the loss may reach the harness after the release.
				h.eventually("not serving", func() bool { return !h.serving() })
				require.Never(t, h.serving, 200*time.Millisecond, 5*time.Millisecond, "a late renewal does not revive the lease")
				for _, r := range store.requests() {
					require.Zero(t, r.Settle)
				}
			})
		})
	}
}

// D4: renewals go out LeaseTTL/3 after the previous one was *sent*, however
// slow its reply, at most one at a time; the guard is the send time of the
// last successful renewal + LeaseTTL - margin, the margin twice the observed
// round trip (at least LeaseTTL/6, at most LeaseTTL/4).
func TestRenewalsAreSpacedFromTheirSendTime(t *testing.T) {
	t.Parallel()
	renewModes(t, func(t *testing.T, batched bool) {
		gate := make(chan struct{})
		store := &fakeStore{renewGate: gate}
		h := newHarness(t, store)
		h.batched = batched
		h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil })
		h.eventually("serving", h.serving)
		h.armedAt(2500 * time.Millisecond) // guard: t0 + 3 s - 0.5 s

		h.armedAt(time.Second)
		h.advanceTo(time.Second)
		h.eventually("renewal 1 sent", func() bool { return store.count("renew") == 1 })
		h.armedAt(2 * time.Second) // the next renewal, from the send time, while this one is in flight
		h.advanceTo(1300 * time.Millisecond)
		gate <- struct{}{} // reply after 0.3 s: margin 0.6 s
		h.armedAt(3400 * time.Millisecond)

		h.advanceTo(2 * time.Second)
		h.eventually("renewal 2 sent", func() bool { return store.count("renew") == 2 })
		h.armedAt(3 * time.Second)
		h.advanceTo(3100 * time.Millisecond) // renewal 3 falls due while 2 is in flight
		require.Equal(t, 2, store.count("renew"), "at most one renewal in flight")
		require.True(t, h.serving())
		store.set(func(s *fakeStore) { s.renewGate = nil })
		gate <- struct{}{} // reply after 1.1 s: margin capped at LeaseTTL/4
		h.eventually("the overdue renewal goes out at once", func() bool { return store.count("renew") == 3 })
		// Renewal 3 was sent at 3.1 s and answered at once: the next goes out
		// at 4.1 s; the guard moves to 3.1 s + 3 s - 0.75 s (the slow round
		// trip still counts, decaying).
		h.armedAt(4100 * time.Millisecond)
		h.armedAt(5350 * time.Millisecond)
		require.Zero(t, h.obs.losses())
		require.True(t, h.serving())
	})
}

// Every handler call has a finite deadline (CallTimeout after its start):
// its context carries it and ends there with ErrCallDeadline, and every
// Advance tells the store the call timeout, the call size and the cap on
// payloads per id, so that the store keeps the bound with the in-flight
// record. A call that ran out is a failure, settled as such.
func TestEveryCallHasADeadline(t *testing.T) {
	t.Parallel()
	renewModes(t, func(t *testing.T, batched bool) {
		store := &fakeStore{jobs: jobs("a")}
		h := newHarness(t, store)
		h.batched = batched
		h.callTimeout = 2 * time.Second
		deadlines := make(chan time.Time, 1)
		process, calls := blocking(h.clock, false, nil)
		h.start(func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
			d, _ := ctx.Deadline() // zero without one: fails below
			deadlines <- d
			return process(ctx, b)
		})
		c := wait(h, calls, "the handler call")
		left := time.Until(wait(h, deadlines, "the deadline"))
		require.True(t, left > 0 && left <= 2*time.Second, "deadline %s away", left)

		h.armedAt(time.Second)
		h.advanceTo(time.Second)
		h.armedAt(3500 * time.Millisecond) // renewed: the guard moves past the call's deadline
		h.advanceTo(2 * time.Second)
		wait(h, c.cancelled, "the cancellation")
		require.Equal(t, t0.Add(2*time.Second), c.at)
		require.ErrorIs(t, c.cause, shard.ErrCallDeadline)
		require.ErrorIs(t, c.cause, context.DeadlineExceeded)

		h.eventually("settled", func() bool { return len(store.requests()) >= 2 })
		reqs := store.requests()
		for _, r := range reqs {
			require.Equal(t, 2*time.Second, r.CallTimeout)
			require.Equal(t, 1, r.CallSize)
			require.Equal(t, 7, r.MaxPayloads)
		}
		require.Len(t, reqs[1].Failures, 1, "a call past its deadline failed")
		// The handler said "retry now" (its clock's time, t0+2s): a call
		// that timed out is retried no earlier than its start plus twice
		// the timeout (docs/contract.md §2.1).
		require.Equal(t, t0.Add(4*time.Second), reqs[1].Failures[0].RetryAt, "due a timeout after the deadline")
		require.Equal(t, t0.Add(4*time.Second), reqs[1].Failures[0].Hold, "and held until then, retries left or not")
		require.Empty(t, reqs[1].Interrupted)
		require.Zero(t, h.obs.losses())
	})
}

// A call that fails before its deadline keeps the retry time its handler
// gave: only a timed-out call waits a timeout past its deadline.
func TestFailureBeforeTheDeadlineKeepsItsRetryTime(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a")}
	h := newHarness(t, store)
	h.callTimeout = 2 * time.Second
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		return []persistence.Failure{{ID: b.Jobs[0].ID, Error: "boom", RetryAt: h.clock.Now()}}, errors.New("boom")
	})
	h.eventually("settled", func() bool { return len(store.requests()) >= 2 })
	reqs := store.requests()
	require.Len(t, reqs[1].Failures, 1)
	require.Equal(t, t0, reqs[1].Failures[0].RetryAt)
	require.Zero(t, reqs[1].Failures[0].Hold)
}

// deadStore answers Advance with what a settlement sends to the morgue; its
// first settling reply is lost (the store did the work, the answer never
// came back), so the actor retries the very same request, which returns the
// same Dead again.
type deadStore struct {
	*fakeStore
	mu      sync.Mutex // guards dropped and cache
	dropped bool
	cache   map[int64]persistence.AdvanceResult
}

func (s *deadStore) Advance(ctx context.Context, l persistence.Lease, req persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res, ok := s.cache[req.NextSeq]; ok {
		return res, nil // a retry: the same answer
	}
	res, err := s.fakeStore.Advance(ctx, l, req)
	if err != nil {
		return res, err
	}
	for _, f := range req.Failures {
		res.Dead = append(res.Dead, persistence.Job{ID: f.ID})
	}
	s.cache[req.NextSeq] = res
	if len(res.Dead) > 0 && !s.dropped {
		s.dropped = true
		return persistence.AdvanceResult{}, errNetwork // the reply is lost
	}
	return res, nil
}

// The retries_exhausted hook sees what went to the morgue even when the
// reply of the Advance that moved it was lost: the actor retries the same
// request and hands the hook the Dead of the retried reply. The hook's
// context carries the actor's shard (internal/shardctx).
func TestDeadReportSurvivesALostAdvanceReply(t *testing.T) {
	t.Parallel()
	store := &deadStore{fakeStore: &fakeStore{jobs: jobs("a")}, cache: map[int64]persistence.AdvanceResult{}}
	h := newHarness(t, store.fakeStore)
	h.storeOverride = store
	dead := make(chan []persistence.Job, 4)
	h.onDead = func(ctx context.Context, d []persistence.Job) {
		if ref, ok := shardctx.Of(ctx); !ok || ref != (persistence.ShardRef{Queue: "q", Shard: 1}) {
			d = nil // the shard is missing: the assertion below fails
		}
		dead <- d
	}
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		return []persistence.Failure{{ID: b.Jobs[0].ID, Error: "boom", RetryAt: t0}}, nil
	})
	h.eventually("the lost reply", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.dropped
	})
	h.armedBefore(time.Second) // the backoff before the retry
	next, _ := h.clock.Next()
	h.clock.Set(next)
	got := wait(h, dead, "the hook")
	require.NotNil(t, got, "the hook's context carries its shard")
	require.Equal(t, []string{"a"}, []string{got[0].ID})
}

// A handler call that ignores its context runs past its deadline +
// StuckGrace: it is logged with its age, shown in the shard's report
// (StuckSince, for the node's status) and told to the observer; once it
// returns, all of that clears.
func TestCallPastItsDeadlineIsSurfaced(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a")}
	h := newHarness(t, store)
	h.callTimeout = 2 * time.Second
	release := make(chan struct{})
	process, calls := blocking(h.clock, true, release)
	h.start(process)
	c := wait(h, calls, "the handler call")
	h.eventually("serving", h.serving)
	// Keep the lease renewed, one renewal at a time, up to the stuck check
	// at 2 s + StuckGrace.
	for k := 1; k <= 7; k++ {
		h.armedAt(time.Duration(k) * time.Second)
		h.advanceTo(time.Duration(k) * time.Second)
		h.eventually("renewed", func() bool { return store.count("renew") == k })
		h.armedAt(time.Duration(k)*time.Second + 2500*time.Millisecond)
	}
	wait(h, c.cancelled, "the cancellation at the deadline")
	require.ErrorIs(t, c.cause, shard.ErrCallDeadline)
	h.eventually("logged", func() bool { return h.logs.has("handler call runs past its deadline") })
	h.eventually("reported stuck", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.report.StuckSince.Equal(t0)
	})
	require.Equal(t, []time.Duration{7 * time.Second}, h.obs.stuckAges())
	require.Zero(t, h.obs.losses())

	close(release)
	h.eventually("cleared", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.report.StuckSince.IsZero()
	})
	require.Equal(t, []time.Duration{7 * time.Second, 0}, h.obs.stuckAges())
}
