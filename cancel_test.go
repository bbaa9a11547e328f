package orderly_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// blocker is a handler that blocks on the calls holding one id until their
// context ends, and records each call's ids and the cause it ended with.
type blocker struct {
	id      string
	started chan struct{} // closed when a call holding id started
	once    sync.Once
	mu      sync.Mutex // guards calls and cause
	calls   [][]string
	cause   error
}

func newBlocker(id string) *blocker { return &blocker{id: id, started: make(chan struct{})} }

func (b *blocker) handle(ctx context.Context, batch *orderly.Batch) error {
	var ids []string
	hold := false
	for _, j := range batch.Jobs {
		ids = append(ids, j.ID)
		hold = hold || j.ID == b.id
	}
	b.mu.Lock()
	b.calls = append(b.calls, ids)
	b.mu.Unlock()
	if !hold {
		return nil
	}
	b.once.Do(func() { close(b.started) })
	<-ctx.Done()
	b.mu.Lock()
	b.cause = context.Cause(ctx)
	b.mu.Unlock()
	return ctx.Err()
}

func (b *blocker) seen(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		for _, x := range c {
			if x == id {
				n++
			}
		}
	}
	return n
}

// docs/contract.md §3.13: cancelling an id a Go handler holds ends the
// handler's ctx with the cause orderly.ErrCancelled; its payloads go to
// the morgue, it is never handed over again, and the other id of the call
// (batch size 2) goes back and is processed.
func TestCancelEndsGoHandlerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newBlocker("a")
	e.start(orderly.Config{Workers: []orderly.Worker{{Queue: "cx", Shards: 1, BatchSize: 2, Timeout: 2 * time.Second,
		Handler: orderly.HandlerFunc(b.handle)}}})
	e.enqueue("cx", client.Job{ID: "a", Payload: []byte("1")}, client.Job{ID: "b", Payload: []byte("2")})
	select {
	case <-b.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call holding a never started")
	}
	e.enqueue("cx", client.Job{ID: "a", Payload: []byte("3")})
	res, err := e.client.Cancel(e.ctx, "cx", "a")
	require.NoError(t, err)
	require.True(t, res.InFlight)
	require.True(t, res.Queued)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.cause != nil
	}, 10*time.Second, 10*time.Millisecond)
	b.mu.Lock()
	require.ErrorIs(t, b.cause, orderly.ErrCancelled)
	b.mu.Unlock()
	require.Eventually(t, func() bool {
		st := e.stats("cx")
		return st.Cancelled == 1 && st.Processed == 1 && st.Length == 0 && st.Busy == 0
	}, 15*time.Second, 20*time.Millisecond, "b comes back and is processed; a is disposed of")
	page, err := e.store.ListMorgue(e.ctx, "cx", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "a", page.Entries[0].ID)
	require.Len(t, page.Entries[0].Payloads, 2)
	require.Equal(t, "cancelled", page.Entries[0].Error)
	require.Equal(t, 1, b.seen("a"), "a is never handed over again")
	require.EqualValues(t, 0, e.stats("cx").Failed)
	_, err = e.client.Cancel(e.ctx, "cx", "a")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}
