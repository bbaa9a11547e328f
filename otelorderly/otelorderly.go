// Package otelorderly traces Orderly jobs with OpenTelemetry
// (docs/contract.md §10): ClientMiddleware opens a span for each Enqueue
// and writes its W3C trace context (traceparent, tracestate) into every
// job's Headers, and ServerMiddleware opens a span for each handler call
// whose parent is the trace context its payloads carry, so that a trace
// goes from the producer to the handler through Redis.
//
// Spans follow the OpenTelemetry messaging conventions: a Producer span
// "<queue> publish" per Enqueue and a Consumer span "<queue> process" per
// handler call, both with messaging.system "orderly" and the queue as
// messaging.destination.name. A handler call holds up to a batch of ids,
// each with payloads enqueued in other traces: when the payloads carry one
// trace context the call's span is its child, otherwise it links to each
// (at most MaxLinks).
//
// Without options the middlewares use the global tracer provider and
// propagator (otel.GetTracerProvider, otel.GetTextMapPropagator), as
// otelhttp and otelgrpc do.
package otelorderly

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/orderlyhq/orderly/otelorderly"

// MaxLinks caps the links of a handler call's span to the trace contexts
// of its payloads; a batch that carries more distinct contexts links to
// the first MaxLinks, in batch order.
const MaxLinks = 128

// maxFailedIDs caps the ids listed in orderly.failed_ids on a call that
// failed some ids (orderly.failed_ids_count counts them all).
const maxFailedIDs = 128

// Option configures ClientMiddleware and ServerMiddleware.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider sets the tracer provider that makes the spans
// [otel.GetTracerProvider()].
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.provider = tp
		}
	})
}

// WithPropagators sets the propagator that writes trace contexts into
// payload headers and reads them back [otel.GetTextMapPropagator()]; the
// default of an OpenTelemetry setup is propagation.TraceContext (W3C
// traceparent and tracestate), often with propagation.Baggage.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) {
		if p != nil {
			c.propagator = p
		}
	})
}

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

func newConfig(opts []Option) (config, trace.Tracer) {
	c := config{provider: otel.GetTracerProvider(), propagator: otel.GetTextMapPropagator()}
	for _, o := range opts {
		o.apply(&c)
	}
	return c, c.provider.Tracer(ScopeName, trace.WithInstrumentationVersion(orderly.Version))
}
