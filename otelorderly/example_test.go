package otelorderly_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/otelorderly"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// The client middleware writes the enqueue span's trace context into each
// job's headers; the server middleware makes the handler's span its child,
// on whichever node handles the job. (Set a tracer provider once with
// otel.SetTracerProvider, and the W3C propagator with
// otel.SetTextMapPropagator, and the middlewares need no options.)
func Example() {
	rec := tracetest.NewSpanRecorder() // an exporter in a real program
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	opts := []otelorderly.Option{
		otelorderly.WithTracerProvider(tp),
		otelorderly.WithPropagators(propagation.TraceContext{}),
	}

	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}

	// The worker: every handler call runs through ServerMiddleware.
	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []orderly.Middleware{otelorderly.ServerMiddleware(opts...)},
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				defer close(done)
				fmt.Println("handler has a span:", trace.SpanFromContext(ctx).SpanContext().IsValid())
				fmt.Println("traceparent header:", b.Jobs[0].Payloads[0].Headers["traceparent"] != "")
				return nil
			},
		}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		panic(err)
	}

	// The producer: every Enqueue runs through ClientMiddleware.
	c, err := client.New(rdb, &client.Config{Middleware: []client.Middleware{otelorderly.ClientMiddleware(opts...)}})
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "orders", client.Job{ID: "order-1", Payload: []byte("paid")}); err != nil {
		panic(err)
	}
	<-done
	if err := node.Stop(ctx); err != nil { // the process span ends with the call
		panic(err)
	}

	spans := map[trace.SpanKind]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.SpanKind()] = s
	}
	publish, process := spans[trace.SpanKindProducer], spans[trace.SpanKindConsumer]
	fmt.Println(publish.Name(), publish.SpanKind())
	fmt.Println(process.Name(), process.SpanKind())
	fmt.Println("one trace:", publish.SpanContext().TraceID() == process.SpanContext().TraceID())
	fmt.Println("parent is the enqueue:", process.Parent().SpanID() == publish.SpanContext().SpanID())
	// Output:
	// handler has a span: true
	// traceparent header: true
	// orders publish producer
	// orders process consumer
	// one trace: true
	// parent is the enqueue: true
}

// A handler call whose payloads were enqueued in a trace continues it: the
// payload's traceparent header names the parent.
func ExampleServerMiddleware() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	handler := otelorderly.ServerMiddleware(
		otelorderly.WithTracerProvider(tp),
		otelorderly.WithPropagators(propagation.TraceContext{}),
	)(func(ctx context.Context, b *orderly.Batch) error {
		fmt.Println("trace", trace.SpanContextFromContext(ctx).TraceID())
		return nil
	})
	headers := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	batch := &orderly.Batch{Queue: "orders", Jobs: []orderly.Job{{
		ID: "order-1", Payloads: []orderly.Payload{{Data: []byte("paid"), Headers: headers}},
	}}}
	if err := handler(context.Background(), batch); err != nil {
		panic(err)
	}
	fmt.Println("parent", rec.Ended()[0].Parent().SpanID())
	// Output:
	// trace 4bf92f3577b34da6a3ce929d0e0e4736
	// parent 00f067aa0ba902b7
}
