package persistence

import (
	"context"
	"fmt"
	"time"
)

// Entity state of stateful queues (docs/contract.md §11).

// DefaultMaxStateBytes is the largest state of one id when a queue sets no
// max_state_bytes.
const DefaultMaxStateBytes = 1 << 20

// State is an id's state: opaque bytes and a version that grows by one with
// each change. Version 0 means the id never had a state; Deleted means its
// state was deleted (a tombstone: the version keeps counting, so a
// compare-and-set holding a version from before the delete fails). Data is
// nil in both cases, and never nil for a state that exists.
type State struct {
	Data    []byte
	Version int64
	// Deleted: the id had a state, deleted at Version.
	Deleted bool
}

// Exists reports whether the id has a state (not none, not deleted).
func (s State) Exists() bool { return s.Version > 0 && !s.Deleted }

// StateWrite is a handler's change to the state of one id of the batch it
// was handed: set Data (Delete false) or delete the state (Delete true).
// It is committed with the acknowledgement of that id only.
type StateWrite struct {
	ID     string
	Data   []byte
	Delete bool
}

// TimerWrite is a handler's change to the timer of one id of the batch it
// was handed: fire at At (Clear false), or clear it. An id has at most one
// timer; setting one replaces it. Committed like a StateWrite.
type TimerWrite struct {
	ID    string
	At    time.Time
	Clear bool
}

// StateStore is the outside compare-and-set on entity state
// (docs/contract.md §11): a role of Store that a store may lack (the
// conformance suite skips its cases then).
type StateStore interface {
	// GetState returns the state of id in queue (Version 0: none).
	GetState(ctx context.Context, queue, id string) (State, error)
	// SetState writes data as the state of id if its current version is
	// expected (0: the id has no state), and returns the new version; a
	// stale expected version fails with ErrVersionConflict and writes
	// nothing. A handler call running for id then fails its commit for id
	// with a conflict, and the id is handed over again with this state.
	// data over maxBytes (0: DefaultMaxStateBytes) is a *FieldError.
	SetState(ctx context.Context, queue, id string, data []byte, expected int64, maxBytes int) (int64, error)
	// DeleteState deletes the state of id if its current version is
	// expected (ErrVersionConflict otherwise), and reports whether there
	// was one. The id keeps a tombstone at the next version: versions never
	// go back, so a compare-and-set holding an older one fails
	// (docs/contract.md §11).
	DeleteState(ctx context.Context, queue, id string, expected int64) (bool, error)
}

// CheckStateSize returns a *FieldError when data is over maxBytes (0:
// DefaultMaxStateBytes).
func CheckStateSize(data []byte, maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxStateBytes
	}
	if len(data) > maxBytes {
		return &FieldError{Field: "state", Index: -1, Reason: fmt.Sprintf("%d bytes is over max_state_bytes (%d)", len(data), maxBytes)}
	}
	return nil
}

// ValidTime returns a *FieldError naming field when t is before 1970 or
// after MaxTimeSeconds.
func ValidTime(t time.Time, field string) error {
	if sec := UnixSeconds(t); sec < 0 || sec > MaxTimeSeconds {
		return &FieldError{Field: field, Index: -1, Reason: timeOutOfRange}
	}
	return nil
}
