package shard

import (
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Messages a shard actor accepts from its node.
type (
	// Wake tells the actor that jobs were enqueued into its shard.
	Wake struct{}

	// Drain asks the actor to stop fetching, finish (or, at Deadline,
	// cancel) its batch, settle, release its lease and stop itself.
	Drain struct{ Deadline time.Time }

	// StatusRequest asks for a Status reply.
	StatusRequest struct{}

	// PermitGranted lets the actor run one batch (and keep the permit while
	// the node lets it continue).
	PermitGranted struct{}

	// PermitWait answers a PermitReturn with Again: the permit went to
	// another shard; the actor's request is queued and a PermitGranted
	// follows later.
	PermitWait struct{}
)

// Messages a shard actor sends to its node (the actor that spawned it).
type (
	// PermitRequest asks for a permit to run a batch. Since estimates the
	// perform_at of the shard's oldest due job (the lag scheduler serves the
	// oldest first).
	PermitRequest struct {
		Ref   persistence.ShardRef
		Since time.Time
	}

	// PermitReturn gives a permit back. With Again, the shard wants to
	// continue: the node answers PermitGranted (keep it) or PermitWait.
	PermitReturn struct {
		Ref   persistence.ShardRef
		Again bool
		Since time.Time
	}

	// Report tells the node about the actor's lease and health, for
	// readiness and the cluster view.
	Report struct {
		Ref     persistence.ShardRef
		Serving bool // holds the lease and its last store call succeeded
		Epoch   int64
		Err     string
	}
)

// Status describes a shard actor.
type Status struct {
	Ref      persistence.ShardRef
	State    string
	Epoch    int64
	InFlight int
	Err      string
}

// Internal messages: results of the actor's own tasks and timers.
type (
	acquired struct {
		lease    persistence.Lease
		restored int
		err      error
		started  time.Time
	}
	advanced struct {
		req persistence.AdvanceRequest
		res persistence.AdvanceResult
		err error
	}
	processed struct {
		seq      int64
		failures []persistence.Failure
		skipped  []string // ids not handled (a drain deadline)
		err      error    // a call's error, for logs
		cut      bool     // cancelled by lease loss or drain deadline
		dur      time.Duration
	}
	renewed struct {
		started time.Time
		err     error
	}
	released struct{ err error }
	trimmed  struct {
		n   int
		err error
	}
	timerFired struct {
		inst uint64
		kind timerKind
		gen  uint64
	}
)

type timerKind int

const (
	timerDue      timerKind = iota // next perform_at
	timerPoll                      // idle poll
	timerRenew                     // lease renewal
	timerGuard                     // lease guard
	timerRetry                     // backoff of a failed store call
	timerDeadline                  // drain deadline
	timerTrim                      // morgue retention
	timerStuck                     // handler ignoring its cancelled context
	numTimers
)
