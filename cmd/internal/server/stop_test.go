package server

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A second SIGTERM while the node drains cuts the drain short: the running
// batch is cancelled at once, although shutdown_timeout would let it run a
// minute, and the node stops.
func TestSecondStopSignalCancelsRunningBatches(t *testing.T) {
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	started := make(chan struct{})
	var cancelled atomic.Bool
	node, err := orderly.NewNode(store, &orderly.Config{
		Name: "n", ShutdownTimeout: time.Minute, Logger: slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Workers: []orderly.Worker{{Queue: "q", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
			close(started)
			<-ctx.Done()
			cancelled.Store(true)
			return ctx.Err()
		}}},
	})
	require.NoError(t, err)
	require.NoError(t, node.Start(context.Background()))
	require.NoError(t, store.Enqueue(context.Background(), "q", []persistence.NewJob{{ID: "a"}}))
	<-started

	signals := make(chan os.Signal, 1)
	stopped := make(chan error, 1)
	go func() { stopped <- stopNode(node, signals, slog.New(slog.DiscardHandler)) }()
	require.Never(t, cancelled.Load, 200*time.Millisecond, 10*time.Millisecond, "the first stop lets the batch run")
	signals <- syscall.SIGTERM
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the second signal did not cut the stop short")
	}
	require.True(t, cancelled.Load())
	info, err := store.GetJob(context.Background(), "q", "a")
	require.NoError(t, err)
	require.NotNil(t, info.Queued, "the cancelled batch is back in the queue")
}

// tlog writes logs to the test's log, so that a failing test shows them.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
