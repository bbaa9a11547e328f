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
// It has everything the untyped Job has: state, timers and emits through
// its methods (and Job for what they do not cover), the delivery and the
// headers as fields. Typed state reads through StateAs and writes through
// SetStateAs.
type TypedJob[T any] struct {
	ID       string
	Payloads []T
	// Queue and Shard name where the job comes from; Delivery names this
	// delivery attempt, as Batch.Delivery does.
	Queue    string
	Shard    int
	Delivery string
	// RetryCount is -1 for a job that never failed; PerformAt is when it
	// was due; Error is its last error.
	RetryCount int
	PerformAt  time.Time
	Error      string
	// Headers are the headers of each payload (docs/contract.md §10):
	// Headers[i] belong to Payloads[i], nil when it has none. Headers is
	// nil when no payload of the job has any.
	Headers []map[string]string

	// job is the untyped job the handler received: its state, timer and
	// emits are the ones the call commits.
	job Job
}

// Job returns the untyped job behind j: what the handler sets on it (state,
// timer, emits) is committed with j's acknowledgement, exactly as for a
// handler of the untyped API.
func (j TypedJob[T]) Job() Job { return j.job }

// Stateful reports whether the job comes from a stateful queue (Job.Stateful).
func (j TypedJob[T]) Stateful() bool { return j.job.Stateful() }

// State returns the id's state as bytes (Job.State); StateAs decodes it.
func (j TypedJob[T]) State() []byte { return j.job.State() }

// StateVersion returns the version of the id's state (Job.StateVersion).
func (j TypedJob[T]) StateVersion() int64 { return j.job.StateVersion() }

// SetState sets the id's state (Job.SetState); SetStateAs encodes it.
func (j TypedJob[T]) SetState(data []byte) { j.job.SetState(data) }

// DeleteState deletes the id's state (Job.DeleteState).
func (j TypedJob[T]) DeleteState() { j.job.DeleteState() }

// Timer reports whether the id's timer brought it (Job.Timer).
func (j TypedJob[T]) Timer() bool { return j.job.Timer() }

// SetTimer sets the id's timer (Job.SetTimer).
func (j TypedJob[T]) SetTimer(at time.Time) { j.job.SetTimer(at) }

// ClearTimer clears the id's timer (Job.ClearTimer).
func (j TypedJob[T]) ClearTimer() { j.job.ClearTimer() }

// Emit enqueues jobs into any queue when the id is acknowledged (Job.Emit).
func (j TypedJob[T]) Emit(e ...Emit) { j.job.Emit(e...) }

// StateHolder is a job whose state can be read and set: Job and every
// TypedJob.
type StateHolder interface {
	State() []byte
	SetState(data []byte)
}

// StateAs decodes the state of j with codec: ok is false (and err nil)
// when the id has no state, or the queue is not stateful.
//
//	bal, ok, err := orderly.StateAs(j, orderly.JSON[Balance]{})
func StateAs[S any](j StateHolder, codec Codec[S]) (v S, ok bool, err error) {
	data := j.State()
	if data == nil {
		return v, false, nil
	}
	if err := codec.Unmarshal(data, &v); err != nil {
		return v, false, fmt.Errorf("orderly: state does not decode as %T: %w", v, err)
	}
	return v, true, nil
}

// SetStateAs encodes v with codec and sets it as the state of j, committed
// with its acknowledgement like SetState.
func SetStateAs[S any](j StateHolder, codec Codec[S], v S) error {
	data, err := codec.Marshal(v)
	if err != nil {
		return fmt.Errorf("orderly: encode state %T: %w", v, err)
	}
	j.SetState(data)
	return nil
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
			tj := TypedJob[T]{ID: j.ID, Payloads: make([]T, len(j.Payloads)), Queue: b.Queue, Shard: b.Shard, Delivery: b.Delivery,
				RetryCount: j.RetryCount, PerformAt: j.PerformAt, Error: j.Error, job: j}
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
