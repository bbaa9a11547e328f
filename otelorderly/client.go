package otelorderly

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly/client"
)

// systemName is the value of messaging.system on every span.
const systemName = "orderly"

// ClientMiddleware returns client middleware (client.Config.Middleware)
// that opens a Producer span "<queue> publish" around each Enqueue, a child
// of the span in the Enqueue's context, and writes the span's trace context
// into every job's Headers through the propagator. It copies the jobs and
// their headers before it writes: the caller's slice and maps are left as
// they were. A header of the same name the caller set is replaced. The
// trace context counts toward a payload's header limits (docs/contract.md
// §10: W3C takes traceparent, and tracestate when the span has one). A
// failed Enqueue sets the span's status to Error.
func ClientMiddleware(opts ...Option) client.Middleware {
	cfg, tracer := newConfig(opts)
	return func(next client.EnqueueFunc) client.EnqueueFunc {
		return func(ctx context.Context, queue string, jobs []client.Job) error {
			ctx, span := tracer.Start(ctx, queue+" publish",
				trace.WithSpanKind(trace.SpanKindProducer),
				trace.WithAttributes(
					semconv.MessagingSystemKey.String(systemName),
					semconv.MessagingDestinationName(queue),
					semconv.MessagingOperationName("publish"),
					semconv.MessagingOperationTypeSend,
					semconv.MessagingBatchMessageCount(len(jobs)),
				))
			defer span.End()
			carrier := propagation.MapCarrier{}
			cfg.propagator.Inject(ctx, carrier)
			if len(carrier) > 0 && len(jobs) > 0 {
				stamped := make([]client.Job, len(jobs))
				for i, j := range jobs {
					h := make(map[string]string, len(j.Headers)+len(carrier))
					maps.Copy(h, j.Headers)
					maps.Copy(h, carrier)
					j.Headers = h
					stamped[i] = j
				}
				jobs = stamped
			}
			err := next(ctx, queue, jobs)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}
