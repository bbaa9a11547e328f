package orderly

import (
	"errors"
	"fmt"
	"time"
)

// Outcomes a handler chooses for its ids (docs/contract.md §3.11). A
// handler returns one of these errors for the whole call, or per id in a
// PartialFailure; wrapped ones count too (fmt.Errorf("...: %w",
// orderly.Dead(err)) is recognized through errors.As). They bypass the
// worker's RetryPolicy and do not count a failure, except Dead.

// outcomeKind is what an outcome error asks for.
type outcomeKind int

const (
	outcomeSnooze outcomeKind = iota + 1
	outcomeDead
	outcomeDiscard
)

// outcomeError is the error Snooze, Dead and Discard return.
type outcomeError struct {
	kind   outcomeKind
	delay  time.Duration // Snooze
	reason error         // Dead, Discard
}

// Snooze returns an error that puts the id (or every id of the call) off
// by d: the payloads it was handed go back to the queue due at now + d
// (now when d is not positive; at most MaxRetryWait), with its retry count and last error
// unchanged; it is neither processed nor failed, and counted as snoozed.
// Payloads queued for the id meanwhile wait with them, in order. On a
// stateful queue nothing of the call commits for the id, and a timer that
// brought it fires again at now + d.
func Snooze(d time.Duration) error {
	return &outcomeError{kind: outcomeSnooze, delay: min(max(d, 0), MaxRetryWait)}
}

// Dead returns an error that sends the payloads the id (or every id of the
// call) was handed to the morgue now, with reason as their error, whatever
// retries it had left; the worker's RetriesExhausted hook sees them as it
// sees ids whose retries ran out. Payloads queued for the id meanwhile stay
// queued. A nil reason reads "dead".
func Dead(reason error) error {
	return &outcomeError{kind: outcomeDead, reason: reason}
}

// Discard returns an error that drops the payloads the id (or every id of
// the call) was handed: they are never delivered again, not buried, and
// counted as discarded in the queue's stats; the reason is logged.
// Payloads queued for the id meanwhile stay queued. A nil reason reads
// "discarded".
func Discard(reason error) error {
	return &outcomeError{kind: outcomeDiscard, reason: reason}
}

// Error implements error.
func (e *outcomeError) Error() string {
	switch e.kind {
	case outcomeSnooze:
		return fmt.Sprintf("snoozed for %s", e.delay)
	case outcomeDead:
		if e.reason == nil {
			return "dead"
		}
		return "dead: " + e.reason.Error()
	default:
		if e.reason == nil {
			return "discarded"
		}
		return "discarded: " + e.reason.Error()
	}
}

// Unwrap returns the reason of Dead and Discard.
func (e *outcomeError) Unwrap() error { return e.reason }

// reasonText is the reason stored or logged for a dead or discarded id.
func (e *outcomeError) reasonText() string {
	if e.reason == nil || e.reason.Error() == "" {
		if e.kind == outcomeDead {
			return "dead"
		}
		return "discarded"
	}
	return truncateError(e.reason.Error())
}

// asOutcome returns the outcome err asks for, if any.
func asOutcome(err error) (*outcomeError, bool) {
	var o *outcomeError
	if err == nil || !errors.As(err, &o) {
		return nil, false
	}
	return o, true
}

// truncateError bounds an error message stored with a job.
func truncateError(msg string) string {
	if len(msg) > maxErrorBytes {
		return msg[:maxErrorBytes]
	}
	return msg
}
