package otelorderly_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/otelorderly"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// On a pull queue whose calls the broker holds, a call's process span
// ends when the worker's answer ends the call, not when the handler
// handed the batch over: it covers the wait, and carries the outcome.
func TestProcessSpanOfAHeldPullCall(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	ctx := context.Background()
	b := pull.New(nil)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []orderly.Middleware{otelorderly.ServerMiddleware(tr.opts...)},
		Workers: []orderly.Worker{{Queue: "pulled", Shards: 1, BatchSize: 1, Prefetch: 10, ConcurrentCalls: 10,
			Timeout: 20 * time.Second, RetryIn: orderly.LinearRetry(time.Hour),
			Handler: b.Handler("pulled", pull.Options{BatchSize: 1, Lease: 10 * time.Second})}},
	})
	require.NoError(t, err)
	require.NoError(t, node.Start(ctx))
	t.Cleanup(func() {
		b.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, node.Stop(ctx))
	})
	c, err := client.NewFromStore(store, nil)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(ctx, "pulled", client.Job{ID: "a", Payload: []byte("1")}, client.Job{ID: "b", Payload: []byte("2")}))
	require.Eventually(t, func() bool { return b.Stats()["pulled"].Pending == 2 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.Empty(t, tr.rec.Ended(), "no span ends before the answer")

	l, err := b.Pull(ctx, "pulled", 10, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, l.Jobs, 2)
	lost, err := b.Answer("pulled", l.ID, &wire.Answer{Failed: map[string]string{"a": "boom"}})
	require.NoError(t, err)
	require.Empty(t, lost)
	ended := tr.rec.Ended()
	require.Len(t, ended, 2, "each held call's span ended with the answer")
	failed := 0
	for _, s := range ended {
		require.Equal(t, "pulled process", s.Name())
		require.GreaterOrEqual(t, s.EndTime().Sub(s.StartTime()), 200*time.Millisecond, "the span covers the wait for the worker")
		if s.Status().Code == codes.Error {
			failed++
		}
	}
	require.Equal(t, 1, failed, "the failed id's call")
}
