package orderly

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Payload is one payload of a job with its score. An id's payloads reach the
// handler in ascending score order.
type Payload struct {
	Data  []byte
	Score float64
	// Headers are the payload's metadata (docs/contract.md §10), nil when none.
	Headers map[string]string
	// ExpiresAt is when the payload would have expired had it not been
	// handed over in time (docs/contract.md §3.15); the zero time when it
	// has no expiry. A handler never receives an expired payload.
	ExpiresAt time.Time
}

// Job is one id of a batch: its payloads (ascending score, ties in byte
// order), retry count (-1 for a job that never failed) and last error; on a
// stateful queue also the id's state (State, SetState, DeleteState; see
// state.go's notes and docs/contract.md §11).
type Job struct {
	ID         string
	Payloads   []Payload
	RetryCount int
	PerformAt  time.Time
	Error      string

	// st is the id's state on a stateful queue (State, SetState), nil
	// otherwise; shared by copies of the Job.
	st *entityState
	// em holds the call's emits (Emit); shared by copies of the Job.
	em *emitBox
}

// Batch is what a handler receives: up to the worker's batch size of
// distinct ids of one shard, earliest perform_at first. No other handler call
// holds any of these ids while this one runs, anywhere in the cluster.
type Batch struct {
	Queue string
	Shard int
	// Delivery names this delivery attempt: "<queue>/<shard>/<epoch>/<seq>".
	// A retry or a redelivery after a crash gets a new value.
	Delivery string
	Jobs     []Job
}

// IDs returns the ids of the batch in order.
func (b *Batch) IDs() []string {
	ids := make([]string, len(b.Jobs))
	for i, j := range b.Jobs {
		ids[i] = j.ID
	}
	return ids
}

// HandlerFunc processes a batch. Returning nil acknowledges every id;
// returning a *PartialFailure (see FailIDs) fails the ids it names and
// acknowledges the others; Snooze, Dead or Discard (wrapped or not)
// chooses that fate for every id of the batch; any other error fails the
// whole batch. A panic is
// a failure of the whole batch. The context is cancelled when the worker's
// timeout passes, when the node stops, or at once when the node loses the
// shard's lease: a handler must stop then. It is also cancelled when the
// call returns (each call has its own, also within one fetched window), so
// work the handler leaves running under it learns that the call is over.
type HandlerFunc func(ctx context.Context, b *Batch) error

// Middleware wraps a handler (server middleware); the first middleware of a
// list is the outermost.
type Middleware func(next HandlerFunc) HandlerFunc

// PartialFailure fails some ids of a batch; every other id of the batch is
// acknowledged. An id's error built with Snooze, Dead or Discard (wrapped
// or not) chooses its fate instead of failing it. Ids that are not in the
// batch are ignored (and logged).
type PartialFailure struct {
	Failed map[string]error
}

// FailIDs returns an error that fails the given ids only. It returns nil
// when failed is empty, so that a handler can return it unconditionally.
func FailIDs(failed map[string]error) error {
	if len(failed) == 0 {
		return nil
	}
	return &PartialFailure{Failed: failed}
}

// Error implements error.
func (e *PartialFailure) Error() string {
	ids := make([]string, 0, len(e.Failed))
	for id := range e.Failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the batch's ids failed:", len(ids))
	for i, id := range ids {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(ids)-3)
			break
		}
		fmt.Fprintf(&b, " %q: %v;", id, e.Failed[id])
	}
	return strings.TrimSuffix(b.String(), ";")
}

// AsPartialFailure reports whether err is (or wraps) a *PartialFailure.
func AsPartialFailure(err error) (*PartialFailure, bool) {
	var pf *PartialFailure
	ok := errors.As(err, &pf)
	return pf, ok
}
