package persistence

import (
	"errors"
	"fmt"
	"time"
)

// Errors callers branch on. Implementations wrap them with the operation and
// the shard or queue concerned; test with errors.Is.
var (
	// ErrLeaseLost is returned by every operation that changes a shard's
	// state when the caller's lease token is no longer the shard's current
	// lease: it expired, or another owner acquired the shard since.
	ErrLeaseLost = errors.New("persistence: shard lease lost")

	// ErrLeaseHeld is returned by AcquireShard when another owner holds a
	// live lease on the shard.
	ErrLeaseHeld = errors.New("persistence: shard lease held by another owner")

	// ErrUnknownQueue is returned when a queue has not been registered.
	ErrUnknownQueue = errors.New("persistence: unknown queue")

	// ErrShardCountMismatch is returned by RegisterQueue when the queue
	// exists, was never resharded, and has a different number of shards:
	// ids are placed by hash modulo the shard count, which only a reshard
	// changes (Resharder). A queue resharded since registers with any
	// count: its shape is the store's.
	ErrShardCountMismatch = errors.New("persistence: queue exists with a different shard count")

	// ErrNotFound is returned when a job or morgue entry does not exist.
	ErrNotFound = errors.New("persistence: not found")

	// ErrInvalid is the sentinel of every *FieldError: the input was
	// rejected and nothing was written.
	ErrInvalid = errors.New("persistence: invalid input")

	// ErrNotReplicated is returned by a store in a replicated durability
	// mode when a write reached fewer replicas than asked in time: the
	// master applied it, but a failover may lose it. An enqueue may be
	// sent again (payloads merge); for the other operations it is a store
	// failure like any other.
	ErrNotReplicated = errors.New("persistence: write not acknowledged by enough replicas")

	// ErrVersionConflict is returned by SetState and DeleteState when the
	// expected version is not the current one: someone else changed the
	// state first. Read it again and retry.
	ErrVersionConflict = errors.New("persistence: state version conflict")

	// ErrUpgradeInProgress is returned by an action, a lookup or a listing
	// that would act on data the previous release's storage layout still
	// holds in a shard no node of this release served yet (a node of the
	// previous release may serve it): nothing was changed. Retry once a
	// node of this release serves the shard (docs/storage.md section 8).
	ErrUpgradeInProgress = errors.New("persistence: storage upgrade in progress")
)

// FieldError reports input that was rejected before anything was written.
// Field names the offending field as users spell it ("id", "payload",
// "score", "perform_at", "queue", "limit", "min", "max", "cursor", ...);
// Index is the position of the offending job in a batch, or -1.
type FieldError struct {
	Field  string
	Index  int
	Reason string
}

// Path names the offending field as the HTTP API does: "jobs[2].score"
// for a field of the third job of a batch, "jobs[2]" for the job as a
// whole (Field empty), "score" outside a batch, "" for a lone job as a
// whole.
func (e *FieldError) Path() string {
	switch {
	case e.Index >= 0 && e.Field != "":
		return fmt.Sprintf("jobs[%d].%s", e.Index, e.Field)
	case e.Index >= 0:
		return fmt.Sprintf("jobs[%d]", e.Index)
	default:
		return e.Field
	}
}

// Error implements error: the path, then the reason.
func (e *FieldError) Error() string {
	if p := e.Path(); p != "" {
		return p + ": " + e.Reason
	}
	return e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalid) true for every FieldError.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// LeaseHeldError is the error of an AcquireShard that met a live lease: who
// holds it and for how much longer (unless renewed). errors.Is(err,
// ErrLeaseHeld) is true.
type LeaseHeldError struct {
	ShardRef
	Holder string
	TTL    time.Duration
}

// Error implements error.
func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: %s/%d is held by %s for %s", ErrLeaseHeld, e.Queue, e.Shard, e.Holder, e.TTL)
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

func fieldErr(field string, index int, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Index: index, Reason: fmt.Sprintf(format, args...)}
}
