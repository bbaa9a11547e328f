package shard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// settleFailing is a store whose Advance calls that settle fail, as long as
// fails says, with what a replicated store returns when the settle reached
// the master but not its replicas; it records every settle it was asked for.
type settleFailing struct {
	*fakeStore

	mu       sync.Mutex // guards the fields below
	fails    int
	attempts []persistence.AdvanceRequest
}

func (s *settleFailing) Advance(ctx context.Context, l persistence.Lease, req persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	if req.Settle != 0 {
		s.mu.Lock()
		s.attempts = append(s.attempts, req)
		fail := s.fails > 0
		if fail {
			s.fails--
		}
		s.mu.Unlock()
		if fail {
			return persistence.AdvanceResult{}, fmt.Errorf("redisstore: advance: %w: 0 of 1 replicas acknowledged the write", persistence.ErrNotReplicated)
		}
	}
	return s.fakeStore.Advance(ctx, l, req)
}

func (s *settleFailing) settles() []persistence.AdvanceRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]persistence.AdvanceRequest(nil), s.attempts...)
}

// A window whose handler call finished and whose settle fails (Redis
// unreachable, or its replica wait falls short) keeps its outcome, state,
// timers and emits in the actor, which retries the very same settle with
// backoff while it holds the lease: the settle commits once, and the handler
// is not called for those ids again (issue #30).
func TestFailedSettleIsRetriedNotTheHandlerCall(t *testing.T) {
	t.Parallel()
	const fails = 4
	store := &settleFailing{fakeStore: &fakeStore{jobs: jobs("a", "b")}, fails: fails}
	h := newHarness(t, store.fakeStore)
	h.storeOverride = store
	var mu sync.Mutex
	var called []string
	h.start(func(_ context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, j := range b.Jobs {
			called = append(called, j.ID)
		}
		b.Emits = append(b.Emits, persistence.Emit{From: b.Jobs[0].ID, Queue: "next", Job: persistence.NewJob{ID: b.Jobs[0].ID, Payload: []byte("e")}})
		return nil, nil
	})
	// Half a second at a time: renewals (every second, sent on the whole
	// second) keep the lease, and each step waits for the renewal's reply
	// to move the lease guard, so that no jump of the clock outruns it.
	committed := func() bool {
		for _, r := range store.requests() {
			if r.Settle != 0 {
				return true
			}
		}
		return false
	}
	h.eventually("the first settle", func() bool { return len(store.settles()) > 0 })
	h.armedAt(time.Second) // the first renewal
	for step := 1; !committed(); step++ {
		require.Less(t, step, 60, "the settle never committed")
		at := time.Duration(step) * 500 * time.Millisecond
		h.advanceTo(at)
		if step%2 == 0 {
			h.eventually("renewal", func() bool { return store.count("renew") == step/2 })
			h.armedAt(at + 2500*time.Millisecond)
		}
		if len(store.settles()) > fails {
			h.eventually("the settle committed", committed)
		}
	}
	h.eventually("b handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(called) == 2
	})

	attempts := store.settles()
	require.GreaterOrEqual(t, len(attempts), fails+1)
	first := attempts[0]
	for _, r := range attempts[:fails+1] {
		require.Equal(t, first, r, "the very same settle is sent again")
	}
	require.Len(t, first.Emits, 1, "the window's emits are kept for the retry")
	commits := 0
	for _, r := range store.requests() {
		if r.Settle == first.Settle {
			commits++
		}
	}
	require.Equal(t, 1, commits, "the settle commits once")
	mu.Lock()
	require.Equal(t, []string{"a", "b"}, called, "no handler call again for a settled window")
	mu.Unlock()
	require.Equal(t, 1, store.count("acquire"), "the lease was held throughout")
	require.Equal(t, 0, h.obs.losses())
	retried, lost := h.obs.settles()
	require.Equal(t, fails, retried, "every retry of the settle is counted")
	require.Zero(t, lost)
}
