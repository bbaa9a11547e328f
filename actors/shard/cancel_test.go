package shard_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/persistence"
)

// docs/contract.md §3.13: Cancel ends the context of the call holding the
// id with the cause persistence.ErrCancelled, and its ids are settled as
// interrupted (never failed); a later call of the window holding a
// cancelled id does not start (its ids are skipped); the rest of the
// window runs.
func TestCancelStopsTheCallHoldingTheID(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a", "b", "c", "d")}
	h := newHarness(t, store)
	h.prefetch = 4    // one window of four calls, one id each
	var mu sync.Mutex // guards called, cause
	var called []string
	var cause error
	started := make(chan struct{})
	h.start(func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		id := b.Jobs[0].ID
		mu.Lock()
		called = append(called, id)
		mu.Unlock()
		if id != "b" {
			return nil, nil
		}
		close(started)
		<-ctx.Done()
		mu.Lock()
		cause = context.Cause(ctx)
		mu.Unlock()
		return []persistence.Failure{{ID: "b", Error: ctx.Err().Error()}}, ctx.Err()
	})
	wait(h, started, "the call of b")
	h.send(shard.Cancel{ID: "d"})
	h.send(shard.Cancel{ID: "b"})
	h.eventually("the window settled", func() bool {
		for _, r := range store.requests() {
			if r.Settle > 0 {
				return true
			}
		}
		return false
	})
	mu.Lock()
	require.True(t, errors.Is(cause, persistence.ErrCancelled), "cause %v", cause)
	require.Equal(t, []string{"a", "b", "c"}, called, "d's call does not start")
	mu.Unlock()
	var settle persistence.AdvanceRequest
	for _, r := range store.requests() {
		if r.Settle > 0 {
			settle = r
			break
		}
	}
	require.Equal(t, []string{"b"}, settle.Interrupted)
	require.Equal(t, []string{"d"}, settle.Skipped)
	require.Empty(t, settle.Failures, "a cancelled call fails nothing")
}
