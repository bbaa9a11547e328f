package otelorderly_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/otelorderly"
)

// tracing is a tracer provider that records ended spans, and the options
// that make the middlewares use it with the W3C propagator.
type tracing struct {
	rec  *tracetest.SpanRecorder
	tp   *sdktrace.TracerProvider
	opts []otelorderly.Option
}

func newTracing(t *testing.T) *tracing {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &tracing{rec: rec, tp: tp, opts: []otelorderly.Option{
		otelorderly.WithTracerProvider(tp),
		otelorderly.WithPropagators(propagation.TraceContext{}),
	}}
}

// only returns the one ended span.
func (tr *tracing) only(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	ended := tr.rec.Ended()
	require.Len(t, ended, 1)
	return ended[0]
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// remote returns a context carrying a remote span context with a
// tracestate, as an incoming request would.
func remote(t *testing.T) (context.Context, trace.SpanContext) {
	ts, err := trace.ParseTraceState("vendor=value")
	require.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc), sc
}

func TestClientMiddlewareInjectsTheEnqueueSpan(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	var got []client.Job
	enqueue := otelorderly.ClientMiddleware(tr.opts...)(func(ctx context.Context, queue string, jobs []client.Job) error {
		got = jobs
		return nil
	})
	ctx, parent := remote(t)
	jobs := []client.Job{{ID: "a", Headers: map[string]string{"k": "v"}}, {ID: "b"}}
	require.NoError(t, enqueue(ctx, "orders", jobs))

	span := tr.only(t)
	require.Equal(t, "orders publish", span.Name())
	require.Equal(t, trace.SpanKindProducer, span.SpanKind())
	require.Equal(t, parent.TraceID(), span.SpanContext().TraceID())
	require.Equal(t, parent.SpanID(), span.Parent().SpanID())
	a := attrs(span)
	require.Equal(t, "orderly", a["messaging.system"].AsString())
	require.Equal(t, "orders", a["messaging.destination.name"].AsString())
	require.EqualValues(t, 2, a["messaging.batch.message_count"].AsInt64())
	require.Equal(t, codes.Unset, span.Status().Code)

	want := fmt.Sprintf("00-%s-%s-01", span.SpanContext().TraceID(), span.SpanContext().SpanID())
	require.Len(t, got, 2)
	for _, j := range got {
		require.Equal(t, want, j.Headers["traceparent"], "job %s", j.ID)
		require.Equal(t, "vendor=value", j.Headers["tracestate"], "job %s", j.ID)
	}
	require.Equal(t, "v", got[0].Headers["k"], "the job's own headers are kept")
	require.Equal(t, map[string]string{"k": "v"}, jobs[0].Headers, "the caller's headers are not written to")
	require.Nil(t, jobs[1].Headers)
}

func TestClientMiddlewareFailedEnqueue(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	boom := errors.New("redis is down")
	enqueue := otelorderly.ClientMiddleware(tr.opts...)(func(context.Context, string, []client.Job) error { return boom })
	require.ErrorIs(t, enqueue(context.Background(), "orders", []client.Job{{ID: "a"}}), boom)
	span := tr.only(t)
	require.Equal(t, codes.Error, span.Status().Code)
	require.Equal(t, "redis is down", span.Status().Description)
	require.Len(t, span.Events(), 1, "the error is recorded")
	require.False(t, span.Parent().IsValid(), "a root span without a span in the context")
}

// headersOf returns the headers ClientMiddleware writes for an enqueue in
// a new root span of tr, and that span's context.
func headersOf(t *testing.T, tr *tracing, queue string) (map[string]string, trace.SpanContext) {
	t.Helper()
	var h map[string]string
	enqueue := otelorderly.ClientMiddleware(tr.opts...)(func(_ context.Context, _ string, jobs []client.Job) error {
		h = jobs[0].Headers
		return nil
	})
	require.NoError(t, enqueue(context.Background(), queue, []client.Job{{ID: "x"}}))
	ended := tr.rec.Ended()
	return h, ended[len(ended)-1].SpanContext()
}

func TestServerMiddlewareParentIsTheEnqueueSpan(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	h, enq := headersOf(t, tr, "orders")
	var inHandler trace.SpanContext
	handle := otelorderly.ServerMiddleware(tr.opts...)(func(ctx context.Context, b *orderly.Batch) error {
		inHandler = trace.SpanContextFromContext(ctx)
		return nil
	})
	// Two payloads of one enqueue (the same trace context) and one without.
	b := &orderly.Batch{Queue: "orders", Shard: 3, Delivery: "orders/3/7/1", Jobs: []orderly.Job{
		{ID: "a", Payloads: []orderly.Payload{{Data: []byte("1"), Headers: h}, {Data: []byte("2"), Headers: h}}},
		{ID: "b", Payloads: []orderly.Payload{{Data: []byte("3")}}},
	}}
	require.NoError(t, handle(context.Background(), b))

	ended := tr.rec.Ended()
	require.Len(t, ended, 2)
	span := ended[1]
	require.Equal(t, "orders process", span.Name())
	require.Equal(t, trace.SpanKindConsumer, span.SpanKind())
	require.Equal(t, enq.TraceID(), span.SpanContext().TraceID())
	require.Equal(t, enq.SpanID(), span.Parent().SpanID(), "the enqueue span is the parent")
	require.True(t, span.Parent().IsRemote())
	require.Empty(t, span.Links())
	require.Equal(t, span.SpanContext(), inHandler, "the handler gets the span in its context")
	a := attrs(span)
	require.Equal(t, "orderly", a["messaging.system"].AsString())
	require.Equal(t, "orders", a["messaging.destination.name"].AsString())
	require.EqualValues(t, 3, a[otelorderly.ShardKey].AsInt64())
	require.Equal(t, "orders/3/7/1", a[otelorderly.DeliveryKey].AsString())
	require.EqualValues(t, 2, a[otelorderly.IDsKey].AsInt64())
	require.EqualValues(t, 3, a["messaging.batch.message_count"].AsInt64())
	require.Equal(t, codes.Unset, span.Status().Code)
}

func TestServerMiddlewareLinksSeveralTraces(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	h1, enq1 := headersOf(t, tr, "orders")
	h2, enq2 := headersOf(t, tr, "orders")
	handle := otelorderly.ServerMiddleware(tr.opts...)(func(context.Context, *orderly.Batch) error { return nil })
	b := &orderly.Batch{Queue: "orders", Jobs: []orderly.Job{
		{ID: "a", Payloads: []orderly.Payload{{Data: []byte("1"), Headers: h1}}},
		{ID: "b", Payloads: []orderly.Payload{{Data: []byte("2"), Headers: h2}, {Data: []byte("3"), Headers: h1}}},
	}}
	require.NoError(t, handle(context.Background(), b))
	span := tr.rec.Ended()[2]
	require.False(t, span.Parent().IsValid(), "no single parent")
	require.NotEqual(t, enq1.TraceID(), span.SpanContext().TraceID())
	require.NotEqual(t, enq2.TraceID(), span.SpanContext().TraceID())
	links := span.Links()
	require.Len(t, links, 2, "one link per distinct trace context")
	require.Equal(t, enq1.SpanID(), links[0].SpanContext.SpanID())
	require.Equal(t, enq2.SpanID(), links[1].SpanContext.SpanID())
}

func TestServerMiddlewareCapsLinks(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	prop := propagation.TraceContext{}
	var jobs []orderly.Job
	for i := range otelorderly.MaxLinks + 10 {
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{byte(i), byte(i >> 8), 1}, SpanID: trace.SpanID{byte(i), 1}, TraceFlags: trace.FlagsSampled,
		})
		h := propagation.MapCarrier{}
		prop.Inject(trace.ContextWithRemoteSpanContext(context.Background(), sc), h)
		jobs = append(jobs, orderly.Job{ID: fmt.Sprint(i), Payloads: []orderly.Payload{{Headers: h}}})
	}
	handle := otelorderly.ServerMiddleware(tr.opts...)(func(context.Context, *orderly.Batch) error { return nil })
	require.NoError(t, handle(context.Background(), &orderly.Batch{Queue: "q", Jobs: jobs}))
	span := tr.only(t)
	require.Len(t, span.Links(), otelorderly.MaxLinks)
	require.EqualValues(t, otelorderly.MaxLinks+10, attrs(span)["messaging.batch.message_count"].AsInt64())
}

func TestServerMiddlewareErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		failed []string
	}{
		{"whole batch", errors.New("downstream refused"), nil},
		{"some ids", orderly.FailIDs(map[string]error{"b": errors.New("no"), "a": errors.New("no")}), []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTracing(t)
			handle := otelorderly.ServerMiddleware(tr.opts...)(func(context.Context, *orderly.Batch) error { return tc.err })
			b := &orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
			require.ErrorIs(t, handle(context.Background(), b), tc.err)
			span := tr.only(t)
			require.Equal(t, codes.Error, span.Status().Code)
			require.Equal(t, tc.err.Error(), span.Status().Description)
			require.Len(t, span.Events(), 1, "the error is recorded")
			a := attrs(span)
			if tc.failed == nil {
				require.NotContains(t, a, otelorderly.FailedIDsKey)
				return
			}
			require.Equal(t, tc.failed, a[otelorderly.FailedIDsKey].AsStringSlice())
			require.EqualValues(t, len(tc.failed), a[otelorderly.FailedIDsCountKey].AsInt64())
		})
	}
}

func TestServerMiddlewareRecordsAPanic(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	handle := otelorderly.ServerMiddleware(tr.opts...)(func(context.Context, *orderly.Batch) error { panic("nil map") })
	require.PanicsWithValue(t, "nil map", func() { _ = handle(context.Background(), &orderly.Batch{Queue: "q"}) }, "the panic goes on")
	span := tr.only(t)
	require.Equal(t, codes.Error, span.Status().Code)
	require.Equal(t, "panic: nil map", span.Status().Description)
	require.Len(t, span.Events(), 1, "recorded as an exception")
	require.Equal(t, "exception", span.Events()[0].Name)
}
