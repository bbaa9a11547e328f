package shard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/persistence"
)

// The lease guard: renewals fail (Redis unreachable), so at
// LeaseTTL - LeaseTTL/6 after the last successful renewal started (here the
// acquisition at t0: 2.5 s) the actor treats the lease as lost, before
// Redis can expire it. The handler is cancelled at that instant and not a
// moment earlier, nothing is settled, and once the handler has returned the
// actor takes the shard again.
func TestLeaseGuardCancelsTheHandlerBeforeTheLeaseCanExpire(t *testing.T) {
	t.Parallel()
	renewModes(t, func(t *testing.T, batched bool) {
		store := &fakeStore{jobs: jobs("a")}
		h := newHarness(t, store)
		h.batched = batched
		process, calls := blocking(h.clock, false, nil)
		h.start(process)
		c := wait(h, calls, "the handler call")
		require.Equal(t, []string{"a"}, c.ids)
		h.eventually("serving", h.serving)

		store.set(func(s *fakeStore) { s.renewErr = errNetwork })
		h.armedAt(time.Second)
		h.advanceTo(time.Second)
		h.eventually("first renewal", func() bool { return store.count("renew") == 1 })
		h.armedAt(2 * time.Second) // the failed renewal is retried every LeaseTTL/3
		h.advanceTo(2 * time.Second)
		h.eventually("second renewal", func() bool { return store.count("renew") == 2 })
		h.armedAt(3 * time.Second)

		h.advanceTo(2500*time.Millisecond - time.Nanosecond)
		select {
		case <-c.cancelled:
			t.Fatalf("handler cancelled at %s, before the guard", c.at.Sub(t0))
		default:
		}
		h.advanceTo(2500 * time.Millisecond)
		wait(h, c.cancelled, "the cancellation")
		require.Equal(t, t0.Add(2500*time.Millisecond), c.at, "cancelled when the guard fired")
		require.EqualError(t, c.cause, "shard lease lost")
		h.eventually("lease loss observed", func() bool { return h.obs.losses() == 1 })
		_, lost := h.obs.settles()
		require.Equal(t, 1, lost, "the id in hand is counted as delivered again by the next owner")
		h.eventually("reported not serving", func() bool { return !h.serving() })
		for _, r := range store.requests() {
			require.Zero(t, r.Settle, "a batch under a lost lease is not settled: the next owner restores it")
		}

		// The lease expires in Redis; the actor takes the shard again.
		store.set(func(s *fakeStore) { s.held, s.renewErr = false, nil })
		h.advanceTo(4 * time.Second)
		h.eventually("acquired again", func() bool { return store.count("acquire") == 2 })
		h.eventually("serving again", h.serving)
	})
}

// A handler that ignores its cancelled context: the actor logs it every
// LeaseTTL and does not take the shard again while the handler runs, so
// that two handlers never hold one id on this node; once the handler
// returns, it does.
func TestStuckHandlerIsLoggedAndWaitedFor(t *testing.T) {
	t.Parallel()
	renewModes(t, func(t *testing.T, batched bool) {
		store := &fakeStore{jobs: jobs("a")}
		h := newHarness(t, store)
		h.batched = batched
		release := make(chan struct{})
		process, calls := blocking(h.clock, true, release)
		h.start(process)
		c := wait(h, calls, "the handler call")
		h.eventually("serving", h.serving)

		store.set(func(s *fakeStore) { s.renewErr = persistence.ErrLeaseLost })
		h.armedAt(time.Second)
		h.advanceTo(time.Second)
		wait(h, c.cancelled, "the cancellation")
		require.EqualError(t, c.cause, "shard lease lost")
		store.set(func(s *fakeStore) { s.held = false }) // another owner could take it now

		h.armedAt(4 * time.Second) // the stuck check, one LeaseTTL after the cancellation
		require.False(t, h.logs.has("handler ignores its cancelled context"))
		h.advanceTo(4 * time.Second)
		h.eventually("stuck handler logged", func() bool { return h.logs.has("handler ignores its cancelled context") })
		h.advanceTo(10 * time.Second)
		require.Equal(t, 1, store.count("acquire"), "no acquisition while the cancelled handler runs")

		close(release)
		h.eventually("acquired once the handler returned", func() bool { return store.count("acquire") == 2 })
		for _, r := range store.requests() {
			require.Zero(t, r.Settle, "the stuck batch is not settled")
		}
	})
}

// The drain deadline cuts a running handler; a second Drain brings the
// deadline forward, a later one does not push it back. The cut call is not
// a failure: its ids are skipped (back to the queue unchanged), then the
// lease is released and the actor stops.
func TestDrainDeadlineCutsTheHandler(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a", "b")}
	h := newHarness(t, store)
	process, calls := blocking(h.clock, false, nil)
	h.start(process)
	c := wait(h, calls, "the handler call")
	h.eventually("serving", h.serving)

	h.send(shard.Drain{Deadline: t0.Add(10 * time.Second)})
	h.eventually("not serving while draining", func() bool { return !h.serving() })
	h.armedAt(10 * time.Second)
	h.send(shard.Drain{Deadline: t0.Add(2 * time.Second)})
	h.armedAt(2 * time.Second)
	h.send(shard.Drain{Deadline: t0.Add(20 * time.Second)})
	// A grant arriving while draining goes back at once; it is also the
	// barrier that shows the last Drain was handled.
	h.send(shard.PermitGranted{})
	h.eventually("grant given back", func() bool { return contains(h.seen(), "return") })
	require.NotContains(t, h.clock.Timers(), t0.Add(10*time.Second))
	require.NotContains(t, h.clock.Timers(), t0.Add(20*time.Second))

	h.advanceTo(2*time.Second - time.Nanosecond)
	select {
	case <-c.cancelled:
		t.Fatalf("handler cut at %s, before the deadline", c.at.Sub(t0))
	default:
	}
	h.advanceTo(2 * time.Second)
	wait(h, c.cancelled, "the cancellation")
	require.Equal(t, t0.Add(2*time.Second), c.at)
	require.EqualError(t, c.cause, "node stopping: drain deadline reached")

	h.eventually("released and stopped", func() bool { return contains(h.seen(), "terminated") })
	require.Equal(t, 1, store.count("release"))
	reqs := store.requests()
	require.Len(t, reqs, 2, "one fetch, one settlement")
	require.Equal(t, []string{"a"}, reqs[1].Interrupted, "the cut id goes back untouched, held until its call's deadline")
	require.Empty(t, reqs[1].Skipped)
	require.Empty(t, reqs[1].Failures, "a cut is not a failure")
	require.Zero(t, reqs[1].Fetch, "a draining shard fetches nothing")
	require.Zero(t, h.obs.batches, "a cut call is not reported as a batch")
}

// Permits: when a batch ends the actor asks to keep its permit. Kept, one
// Advance settles and fetches; yielded, it settles only, waits in line, and
// fetches once granted again.
func TestPermitsKeptOrYielded(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a", "b", "c")}
	h := newHarness(t, store)
	proceed := make(chan struct{})
	started := make(chan string, 4)
	h.start(func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		started <- b.Jobs[0].ID
		<-proceed
		return nil, nil
	})
	require.Equal(t, "a", wait(h, started, "call a"))
	proceed <- struct{}{} // a done; the node lets the shard keep its permit
	require.Equal(t, "b", wait(h, started, "call b"))

	h.mu.Lock()
	h.keep = false
	h.mu.Unlock()
	proceed <- struct{}{} // b done; the permit goes to another shard
	h.eventually("settled alone", func() bool { return len(store.requests()) == 3 })
	select {
	case id := <-started:
		t.Fatalf("%s started without a permit", id)
	default:
	}
	h.mu.Lock()
	h.keep = true
	h.mu.Unlock()
	h.send(shard.PermitGranted{}) // the node's turn comes back to this shard
	require.Equal(t, "c", wait(h, started, "call c"))
	proceed <- struct{}{}
	h.eventually("permit returned after the empty fetch", func() bool { return contains(h.seen(), "return") })

	type req struct {
		settle int64
		fetch  int
	}
	var got []req
	for _, r := range store.requests() {
		got = append(got, req{r.Settle, r.Fetch})
	}
	require.Equal(t, []req{{0, 1}, {1, 1}, {2, 0}, {0, 1}, {4, 1}}, got,
		"fetch a; settle a + fetch b (kept); settle b alone (yielded); fetch c (granted); settle c + fetch nothing")
	require.Equal(t, []string{"request", "keep", "yield", "keep", "return"}, h.seen())
}

// A Drain while the actor holds a permit for a fetch it has not started
// gives the permit back at once; with nothing in flight it releases the
// lease and stops.
func TestDrainWhileIdleReleasesAndStops(t *testing.T) {
	t.Parallel()
	renewModes(t, func(t *testing.T, batched bool) {
		store := &fakeStore{}
		h := newHarness(t, store)
		h.batched = batched
		h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil })
		h.eventually("serving", h.serving)
		h.eventually("fetched nothing", func() bool { return contains(h.seen(), "return") })
		h.send(shard.Drain{Deadline: t0.Add(time.Minute)})
		h.eventually("released and stopped", func() bool { return contains(h.seen(), "terminated") })
		require.Equal(t, 1, store.count("release"))
	})
}

// A window fetched while the drain began is not started: its ids are
// settled as skipped (back as they were, due at once) before the release.
// Left to the release, they would wait for their calls' deadline bound as
// if a call of them could be running, and the next owner would not fetch
// them for up to the call timeout.
func TestDrainSettlesAWindowNotStarted(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	store := &fakeStore{jobs: jobs("a", "b"), fetchGate: gate}
	h := newHarness(t, store)
	var calls atomic.Int64
	h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) {
		calls.Add(1)
		return nil, nil
	})
	h.eventually("fetching", func() bool { return store.count("advance") >= 1 })
	h.send(shard.Drain{Deadline: t0.Add(time.Minute)})
	close(gate)
	h.eventually("released and stopped", func() bool { return contains(h.seen(), "terminated") })
	require.Zero(t, calls.Load(), "no call starts while draining")
	reqs := store.requests()
	require.Len(t, reqs, 2, "the fetch, then the settle")
	require.Equal(t, reqs[0].NextSeq, reqs[1].Settle)
	require.Zero(t, reqs[1].Fetch)
	require.Equal(t, []string{"a", "b"}[:reqs[0].Fetch], reqs[1].Skipped, "every id fetched")
	require.Equal(t, 1, store.count("release"))
}

// A draining actor that cannot reach the store past its deadline gives up:
// it leaves the lease to expire and stops, rather than retrying for ever.
func TestDrainGivesUpWhenTheStoreIsDown(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	h := newHarness(t, store)
	h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil })
	h.eventually("serving", h.serving)
	h.eventually("idle", func() bool { return contains(h.seen(), "return") })
	store.set(func(s *fakeStore) { s.releaseErr = errNetwork; s.renewErr = errNetwork })
	h.send(shard.Drain{Deadline: t0.Add(time.Second)})
	h.eventually("release tried", func() bool { return store.count("release") >= 1 })
	h.armedBefore(time.Second) // the backoff (the deadline and the renewal are due at 1 s)
	h.advanceTo(500 * time.Millisecond)
	h.eventually("release retried", func() bool { return store.count("release") >= 2 })
	h.advanceTo(2 * time.Second)
	h.eventually("gave up and stopped", func() bool { return contains(h.seen(), "terminated") })
}

// A message of an unknown type is logged, not silently dropped.
func TestUnknownMessageIsLogged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &fakeStore{})
	h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil })
	h.send(struct{ Bogus int }{1})
	h.eventually("logged", func() bool { return h.logs.has("shard actor ignores an unknown message") })
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// docs/contract.md §9: a paused queue starts no handler call. A window
// fetched while the queue is paused (the actor started paused: its node
// read the controls first) goes back untouched; once the node tells the
// actor that the queue is resumed (Pause), the next window is handled.
func TestPausedQueueStartsNoCallUntilResumed(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a", "b")}
	h := newHarness(t, store)
	h.prefetch, h.paused, h.keep = 2, true, false
	var calls atomic.Int64
	h.start(func(context.Context, *persistence.Batch) ([]persistence.Failure, error) {
		calls.Add(1)
		return nil, nil
	})
	h.eventually("the window settled as skipped", func() bool {
		reqs := store.requests()
		return len(reqs) == 2 && len(reqs[1].Skipped) == 2
	})
	require.Zero(t, calls.Load(), "no call starts while the queue is paused")
	require.Contains(t, h.logs.String(), "queue paused")

	h.send(shard.Pause{Paused: false})
	store.set(func(s *fakeStore) { s.jobs = jobs("a", "b") })
	h.mu.Lock()
	h.keep = true
	h.mu.Unlock()
	h.send(shard.PermitGranted{}) // the node serves the waiting shard once the queue is resumed
	h.eventually("both ids handled", func() bool { return calls.Load() == 2 })

	h.send(shard.Pause{Paused: true})
	store.set(func(s *fakeStore) { s.jobs = jobs("c") })
	h.send(shard.Wake{})
	h.eventually("the new window settled as skipped", func() bool {
		reqs := store.requests()
		return len(reqs[len(reqs)-1].Skipped) == 1
	})
	require.Equal(t, int64(2), calls.Load(), "paused again: no call")
}
