package orderly_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// blockingNode starts a node (ShutdownTimeout an hour) whose handler holds
// its batch until its context is cancelled, or longer when it is told to
// ignore the cancellation; it returns once the handler runs.
func blockingNode(t *testing.T, e *env, stubborn <-chan struct{}) (*orderly.Node, *atomic.Value) {
	t.Helper()
	started := make(chan struct{})
	var cause atomic.Value
	n, err := orderly.NewNode(e.store, &orderly.Config{Name: "stopping", Logger: testLogger(t), ShutdownTimeout: time.Hour,
		Workers: []orderly.Worker{{Queue: "q", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
			close(started)
			<-ctx.Done()
			cause.Store(ctx.Err())
			if stubborn != nil {
				<-stubborn
			}
			return ctx.Err()
		}}}})
	require.NoError(t, err)
	require.NoError(t, n.Start(e.ctx))
	e.enqueue("q", client.Job{ID: "a", Payload: []byte("x")})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never ran")
	}
	return n, &cause
}

// afterStop checks what a stop that cut the batch leaves: the batch back in
// the queue unchanged, the lease released.
func (e *env) afterStop() {
	e.t.Helper()
	info, err := e.store.GetJob(e.ctx, "q", "a")
	require.NoError(e.t, err)
	require.NotNil(e.t, info.Queued, "the cut batch is back in the queue")
	require.Equal(e.t, -1, info.Queued.RetryCount, "a stop is not a failure")
	l, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q"}, "other", time.Minute)
	require.NoError(e.t, err, "the lease was released")
	require.NoError(e.t, e.store.ReleaseShard(e.ctx, l))
}

// StopAndCancel during a graceful Stop whose deadline is an hour away
// escalates it: the running handler is cancelled at once, both calls
// return once the node has stopped, with the same outcome.
func TestStopAndCancelEscalatesARunningStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n, cause := blockingNode(t, e, nil)
	stopped := make(chan error, 1)
	go func() { stopped <- n.Stop(e.ctx) }()
	require.Never(t, func() bool { return cause.Load() != nil }, 200*time.Millisecond, 10*time.Millisecond, "the graceful stop lets the handler run")

	began := time.Now()
	require.NoError(t, n.StopAndCancel(e.ctx))
	t.Logf("StopAndCancel cancelled the handler and returned with the node stopped after %s", time.Since(began).Round(time.Microsecond))
	require.ErrorIs(t, cause.Load().(error), context.Canceled)
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return once the node stopped")
	}
	e.afterStop()
	require.NoError(t, n.Stop(e.ctx), "stopping a stopped node returns its outcome")
	require.ErrorIs(t, n.Start(e.ctx), orderly.ErrStopped)
}

// A second Stop with an earlier deadline brings the stop forward; one with a
// later deadline would not push it back.
func TestSecondStopBringsTheDeadlineForward(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n, cause := blockingNode(t, e, nil)
	first := make(chan error, 1)
	go func() { first <- n.Stop(e.ctx) }()
	require.Never(t, func() bool { return cause.Load() != nil }, 100*time.Millisecond, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	require.NoError(t, n.Stop(ctx), "the second stop cut the batch at its deadline and the node stopped")
	require.NotNil(t, cause.Load())
	require.NoError(t, <-first)
	e.afterStop()
}

// Cancelling Stop's context cuts the stop short as StopAndCancel does.
func TestStopHonoursCancellation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n, cause := blockingNode(t, e, nil)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- n.Stop(ctx) }()
	require.Never(t, func() bool { return cause.Load() != nil }, 100*time.Millisecond, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "the node stopped within the grace after the cancellation")
	case <-time.After(10 * time.Second):
		t.Fatal("Stop ignored its context")
	}
	e.afterStop()
}

// A handler that ignores its context keeps the node from stopping: Stop
// returns after its context ended (and the grace), saying so, while the
// node goes on stopping; a later call waits for the end.
func TestStopReturnsWhenAHandlerIgnoresItsContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	n, cause := blockingNode(t, e, release)
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	err := n.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "still stopping")
	require.NotNil(t, cause.Load(), "the handler was cancelled")

	close(release)
	require.NoError(t, n.StopAndCancel(e.ctx), "the stop completes once the handler returns")
	e.afterStop()
}

// Start, Stop and StopAndCancel on a node that never started.
func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n, err := orderly.NewNode(e.store, &orderly.Config{Logger: testLogger(t), Workers: []orderly.Worker{{Queue: "q", Handler: func(context.Context, *orderly.Batch) error { return nil }}}})
	require.NoError(t, err)
	require.NoError(t, n.Stop(e.ctx))
	require.NoError(t, n.StopAndCancel(e.ctx))
	require.ErrorIs(t, n.Ready(e.ctx), orderly.ErrNotReady)
	_, err = n.Status(e.ctx)
	require.True(t, errors.Is(err, orderly.ErrNotRunning))
}
