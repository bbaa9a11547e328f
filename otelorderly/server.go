package otelorderly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/deferred"
)

// Attributes of a handler call's span besides the messaging conventions.
const (
	// ShardKey is the shard of the batch (also messaging.destination.partition.id).
	ShardKey = attribute.Key("orderly.shard")
	// DeliveryKey is the batch's delivery name, "<queue>/<shard>/<epoch>/<seq>".
	DeliveryKey = attribute.Key("orderly.delivery")
	// IDsKey counts the ids of the batch (messaging.batch.message_count
	// counts its payloads).
	IDsKey = attribute.Key("orderly.ids")
	// FailedIDsKey lists the ids a *orderly.PartialFailure failed, sorted,
	// at most 128 of them.
	FailedIDsKey = attribute.Key("orderly.failed_ids")
	// FailedIDsCountKey counts the ids a *orderly.PartialFailure failed.
	FailedIDsCountKey = attribute.Key("orderly.failed_ids_count")
)

// ServerMiddleware returns server middleware (orderly.Config.Middleware)
// that opens a Consumer span "<queue> process" around each handler call;
// the handler finds it in its context (trace.SpanFromContext), so that its
// own spans are children of it.
//
// The trace contexts come from the payloads' Headers through the
// propagator. When the payloads carry one (one payload, or all carry the
// same, or only one carries any) the span is its child, in the enqueue's
// trace; when they carry several, the span starts from the handler's
// context and links to each distinct one, at most MaxLinks. A handler
// error or panic is recorded and sets the status to Error (the panic goes
// on to the node); a *orderly.PartialFailure also lists the failed ids
// (FailedIDsKey, FailedIDsCountKey).
func ServerMiddleware(opts ...Option) orderly.Middleware {
	cfg, tracer := newConfig(opts)
	return func(next orderly.HandlerFunc) orderly.HandlerFunc {
		return func(ctx context.Context, b *orderly.Batch) error {
			payloads := 0
			var first context.Context // the context extracted for links[0]
			var links []trace.Link
			type spanKey struct {
				trace trace.TraceID
				span  trace.SpanID
			}
			seen := map[spanKey]bool{}
			for _, j := range b.Jobs {
				payloads += len(j.Payloads)
				for _, p := range j.Payloads {
					if len(p.Headers) == 0 || len(links) >= MaxLinks {
						continue
					}
					pctx := cfg.propagator.Extract(ctx, propagation.MapCarrier(p.Headers))
					sc := trace.SpanContextFromContext(pctx)
					k := spanKey{sc.TraceID(), sc.SpanID()}
					if !sc.IsValid() || seen[k] {
						continue
					}
					seen[k] = true
					if first == nil {
						first = pctx
					}
					links = append(links, trace.Link{SpanContext: sc})
				}
			}
			start := []trace.SpanStartOption{
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					semconv.MessagingSystemKey.String(systemName),
					semconv.MessagingDestinationName(b.Queue),
					semconv.MessagingDestinationPartitionID(strconv.Itoa(b.Shard)),
					semconv.MessagingOperationName("process"),
					semconv.MessagingOperationTypeProcess,
					semconv.MessagingBatchMessageCount(payloads),
					ShardKey.Int(b.Shard),
					DeliveryKey.String(b.Delivery),
					IDsKey.Int(len(b.Jobs)),
				),
			}
			parent := ctx
			switch {
			case len(links) == 1:
				parent = first // the payloads' one trace context
			case len(links) > 1:
				start = append(start, trace.WithLinks(links...))
			}
			ctx, span := tracer.Start(parent, b.Queue+" process", start...)
			held := false // the pull broker holds the call: its span ends when the call does
			defer func() {
				// A panic fails the batch (the node recovers it): record
				// it, set the status and let it go on.
				if r := recover(); r != nil {
					span.RecordError(fmt.Errorf("panic: %v", r), trace.WithStackTrace(true))
					span.SetStatus(codes.Error, fmt.Sprintf("panic: %v", r))
					span.End()
					panic(r)
				}
				if !held {
					span.End()
				}
			}()
			err := next(ctx, b)
			if d := deferred.From(ctx); d != nil && errors.Is(err, deferred.ErrHeld) && d.Held() {
				// The pull broker holds the call: the span ends when
				// the call does, with the worker's outcome.
				held = true
				d.OnEnd(func(err error) {
					recordOutcome(span, err)
					span.End()
				})
				return err
			}
			recordOutcome(span, err)
			return err
		}
	}
}

// recordOutcome records a call's error on its span.
func recordOutcome(span trace.Span, err error) {
	if err == nil {
		return
	}
	var pf *orderly.PartialFailure
	if errors.As(err, &pf) {
		ids := make([]string, 0, len(pf.Failed))
		for id := range pf.Failed {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		span.SetAttributes(FailedIDsCountKey.Int(len(ids)), FailedIDsKey.StringSlice(ids[:min(len(ids), maxFailedIDs)]))
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
