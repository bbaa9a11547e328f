package orderly

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Codec turns the payload bytes of a queue into values of T. JSON[T] is the
// default of Handle; any type with these methods fits, e.g. one over
// protobuf. A producer's codec (client.Codec) has the same methods, so one
// value serves both sides.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte, v *T) error
}

// JSON is the codec of encoding/json.
type JSON[T any] struct{}

// Marshal implements Codec.
func (JSON[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

// Unmarshal implements Codec.
func (JSON[T]) Unmarshal(data []byte, v *T) error { return json.Unmarshal(data, v) }

// TypedJob is one id of a batch with its payloads decoded, in score order.
type TypedJob[T any] struct {
	ID       string
	Payloads []T
	// RetryCount is -1 for a job that never failed; PerformAt is when it
	// was due; Error is its last error.
	RetryCount int
	PerformAt  time.Time
	Error      string
	// Headers are the headers of each payload (docs/contract.md §10):
	// Headers[i] belong to Payloads[i], nil when it has none. Headers is
	// nil when no payload of the job has any.
	Headers []map[string]string
}

// Handle returns a handler that decodes each job's payloads as JSON into T
// and calls fn once per job of the batch, in order. An error from fn fails
// that job's id only (it is retried with all its payloads); nil
// acknowledges it; Snooze, Dead and Discard (wrapped or not) choose that
// id's fate as they do in a PartialFailure. A payload that does not decode fails its id with the
// decoding error, without calling fn, so that it reaches the morgue after
// its retries rather than blocking the shard. When ctx ends, the jobs not
// handled yet fail with ctx's error.
//
//	orderly.Worker{Queue: "emails", Handler: orderly.Handle(func(ctx context.Context, j orderly.TypedJob[Email]) error {
//		for _, e := range j.Payloads { ... }
//		return nil
//	})}
func Handle[T any](fn func(ctx context.Context, j TypedJob[T]) error) HandlerFunc {
	return HandleWith[T](JSON[T]{}, fn)
}

// HandleWith is Handle with another codec.
func HandleWith[T any](codec Codec[T], fn func(ctx context.Context, j TypedJob[T]) error) HandlerFunc {
	return func(ctx context.Context, b *Batch) error {
		failed := make(map[string]error)
		for _, j := range b.Jobs {
			if err := ctx.Err(); err != nil {
				failed[j.ID] = err
				continue
			}
			tj := TypedJob[T]{ID: j.ID, Payloads: make([]T, len(j.Payloads)), RetryCount: j.RetryCount, PerformAt: j.PerformAt, Error: j.Error}
			var err error
			for i, p := range j.Payloads {
				if len(p.Headers) > 0 {
					if tj.Headers == nil {
						tj.Headers = make([]map[string]string, len(j.Payloads))
					}
					tj.Headers[i] = p.Headers
				}
				if uerr := codec.Unmarshal(p.Data, &tj.Payloads[i]); uerr != nil {
					err = fmt.Errorf("orderly: payload %d of %q does not decode as %T: %w", i, j.ID, tj.Payloads[i], uerr)
					break
				}
			}
			if err == nil {
				err = fn(ctx, tj)
			}
			if err != nil {
				failed[j.ID] = err
			}
		}
		if len(failed) == len(b.Jobs) && len(b.Jobs) == 1 {
			return failed[b.Jobs[0].ID] // one job: its error as it is
		}
		return FailIDs(failed)
	}
}
