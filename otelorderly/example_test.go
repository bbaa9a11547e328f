package otelorderly_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/otelorderly"
)

// The client middleware writes the enqueue span's trace context into each
// job's headers; the server middleware makes the handler's span its child.
// Here the jobs go from one to the other by hand; in a real setup they go
// through Redis (client.Config.Middleware, orderly.Config.Middleware).
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	opts := []otelorderly.Option{
		otelorderly.WithTracerProvider(tp),
		otelorderly.WithPropagators(propagation.TraceContext{}),
	}

	// The producer: Enqueue runs through ClientMiddleware.
	var sent []client.Job
	enqueue := otelorderly.ClientMiddleware(opts...)(func(ctx context.Context, queue string, jobs []client.Job) error {
		sent = jobs // what the client writes to Redis
		return nil
	})
	if err := enqueue(context.Background(), "orders", []client.Job{{ID: "order-1", Payload: []byte("paid")}}); err != nil {
		panic(err)
	}

	// The worker: the handler runs through ServerMiddleware.
	handler := otelorderly.ServerMiddleware(opts...)(func(ctx context.Context, b *orderly.Batch) error {
		fmt.Println("handler has a span:", trace.SpanFromContext(ctx).SpanContext().IsValid())
		return nil
	})
	batch := &orderly.Batch{Queue: "orders", Shard: 2, Delivery: "orders/2/1/1", Jobs: []orderly.Job{{
		ID:       "order-1",
		Payloads: []orderly.Payload{{Data: sent[0].Payload, Headers: sent[0].Headers}},
	}}}
	if err := handler(context.Background(), batch); err != nil {
		panic(err)
	}

	spans := rec.Ended()
	publish, process := spans[0], spans[1]
	fmt.Println(publish.Name(), publish.SpanKind())
	fmt.Println(process.Name(), process.SpanKind())
	fmt.Println("one trace:", publish.SpanContext().TraceID() == process.SpanContext().TraceID())
	fmt.Println("parent is the enqueue:", process.Parent().SpanID() == publish.SpanContext().SpanID())
	// Output:
	// handler has a span: true
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
