package otelorderly_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/otelorderly"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// docs/contract.md §10, end to end: a job enqueued inside a span through a
// client with ClientMiddleware reaches a real node's handler, through a
// real Redis, inside a span of the same trace whose parent is the enqueue
// span.
func TestTraceFromEnqueueToHandler(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	ctx := context.Background()

	handled := make(chan trace.SpanContext, 1)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []orderly.Middleware{otelorderly.ServerMiddleware(tr.opts...)},
		Workers: []orderly.Worker{{Queue: "traced", Shards: 2, Handler: func(ctx context.Context, b *orderly.Batch) error {
			handled <- trace.SpanContextFromContext(ctx)
			return nil
		}}},
	})
	require.NoError(t, err)
	require.NoError(t, node.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, node.Stop(ctx))
	})

	c, err := client.NewFromStore(store, &client.Config{Middleware: []client.Middleware{otelorderly.ClientMiddleware(tr.opts...)}})
	require.NoError(t, err)
	rctx, root := tr.tp.Tracer("test").Start(ctx, "checkout")
	require.NoError(t, c.Enqueue(rctx, "traced", client.Job{ID: "order-1", Payload: []byte("paid")}))
	root.End()

	var inHandler trace.SpanContext
	select {
	case inHandler = <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not handled within 10s")
	}
	require.Equal(t, root.SpanContext().TraceID(), inHandler.TraceID(), "the handler runs in the enqueue's trace")

	var publish, process trace.SpanContext
	var parent trace.SpanContext
	require.Eventually(t, func() bool {
		for _, s := range tr.rec.Ended() {
			switch s.Name() {
			case "traced publish":
				publish = s.SpanContext()
			case "traced process":
				process, parent = s.SpanContext(), s.Parent()
			}
		}
		return process.IsValid()
	}, 10*time.Second, 10*time.Millisecond, "the process span ends")
	require.Equal(t, inHandler, process)
	require.Equal(t, publish.TraceID(), process.TraceID())
	require.Equal(t, publish.SpanID(), parent.SpanID(), "the enqueue span is the parent")
}
