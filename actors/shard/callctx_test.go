package shard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// A handler call's context ends when the call returns, also when the next
// call of the same window follows at once: a goroutine that a call leaves
// behind, watching its context, sees the call is over. The next call gets
// a live context with a deadline.
func TestCallContextEndsWhenTheCallReturns(t *testing.T) {
	t.Parallel()
	store := &fakeStore{jobs: jobs("a", "b", "c", "d")}
	h := newHarness(t, store)
	h.prefetch = 4    // one window of four calls, one id each
	var mu sync.Mutex // guards ctxs, live
	var ctxs []context.Context
	var live []bool // per call: whether the previous call's context was still live during it
	watched := make(chan error, 1)
	h.start(func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(ctxs) > 0 {
			live = append(live, ctxs[len(ctxs)-1].Err() == nil)
		}
		if _, ok := ctx.Deadline(); !ok || ctx.Err() != nil {
			live = append(live, true) // a call must start with a live context with a deadline
		}
		if len(ctxs) == 0 {
			go func() { // left behind by the first call
				<-ctx.Done()
				watched <- ctx.Err()
			}()
		}
		ctxs = append(ctxs, ctx)
		return nil, nil
	})
	h.eventually("the window handled", func() bool { return contains(h.seen(), "return") })
	require.ErrorIs(t, wait(h, watched, "the first call's goroutine sees its context end"), context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ctxs, 4)
	require.Equal(t, []bool{false, false, false}, live, "no call runs while an earlier call's context is live")
	for i, ctx := range ctxs {
		require.ErrorIs(t, ctx.Err(), context.Canceled, "call %d", i+1)
	}
}
