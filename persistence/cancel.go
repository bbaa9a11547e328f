package persistence

import (
	"errors"
	"fmt"
)

// ErrCancelled is the cause of a handler call's context when an operator
// cancelled an id the call holds (docs/contract.md §3.13): test it with
// errors.Is(context.Cause(ctx), ErrCancelled).
var ErrCancelled = errors.New("persistence: job cancelled")

// CancelMode is what a cancel does with the payloads of the id.
type CancelMode string

// The cancel modes.
const (
	// CancelKill moves the payloads to the morgue, with the error
	// "cancelled" (the default).
	CancelKill CancelMode = "kill"
	// CancelDelete drops the payloads.
	CancelDelete CancelMode = "delete"
)

// ParseCancelMode reads a mode: "" and "kill" are CancelKill, "delete"
// CancelDelete; anything else is a *FieldError.
func ParseCancelMode(s string) (CancelMode, error) {
	switch CancelMode(s) {
	case "", CancelKill:
		return CancelKill, nil
	case CancelDelete:
		return CancelDelete, nil
	}
	return "", fieldErr("mode", -1, "must be %q or %q, not %q", CancelKill, CancelDelete, s)
}

// CancelResult is what a cancel did.
type CancelResult struct {
	// Queued tells that the id had a queued entry, now killed or deleted;
	// Payloads counts its payloads moved or dropped.
	Queued   bool
	Payloads int
	// InFlight tells that a handler call held the id: it is marked in the
	// in-flight record and its node was notified.
	InFlight bool
}

// Found reports whether the cancel found the id queued or in flight.
func (r CancelResult) Found() bool { return r.Queued || r.InFlight }

// CancelNotice asks the owner of a shard to cancel the handler call that
// holds ID (docs/contract.md §3.13).
type CancelNotice struct {
	ShardRef
	ID string
}

// String implements fmt.Stringer.
func (n CancelNotice) String() string { return fmt.Sprintf("%s/%d %q", n.Queue, n.Shard, n.ID) }

// CancelSubscription is a Subscription that also delivers cancel notices.
// A node cancels the calls it runs for the ids named; a notice is a hint
// like the others (the settle disposes of a cancelled id whatever happens
// to the notice).
type CancelSubscription interface {
	Subscription
	// Cancels delivers cancel notices of the subscribed queues; it is
	// closed by Close.
	Cancels() <-chan CancelNotice
}
