package shard

import (
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Messages a shard actor accepts from its node.
type (
	// Wake tells the actor that jobs were enqueued into its shard (or that
	// its lease was released elsewhere).
	Wake struct{}

	// Drain asks the actor to stop fetching, finish its batch (or, at
	// Deadline, cancel it), settle, release its lease and stop itself. A
	// later Drain with an earlier Deadline brings the deadline forward; one
	// with a later Deadline changes nothing.
	Drain struct{ Deadline time.Time }

	// Pause tells the actor that its queue was paused or resumed
	// (docs/contract.md §9): while paused, no handler call starts. Sent
	// as a request, it is answered with PauseApplied once no new call can
	// start (a paused queue) or calls may start again.
	Pause struct{ Paused bool }

	// Cancel asks the actor to cancel the handler call that holds ID
	// (docs/contract.md §3.13): the call's context ends with the cause
	// persistence.ErrCancelled, and a call of the window holding ID that
	// has not started does not start. The store disposes of the id at the
	// settle.
	Cancel struct{ ID string }

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

	// PauseApplied answers a Pause sent as a request.
	PauseApplied struct{}

	// PermitReturn gives a permit back (or withdraws a request for one).
	// With Again, the shard wants to continue: the node answers
	// PermitGranted (keep it) or PermitWait.
	PermitReturn struct {
		Ref   persistence.ShardRef
		Again bool
		Since time.Time
	}

	// Report tells the node about the actor's lease and health, for
	// readiness and the cluster view. An actor that stops reports a zero
	// Report (not serving).
	Report struct {
		Ref     persistence.ShardRef
		Serving bool // holds the lease, its last store call succeeded, not draining
		Epoch   int64
		Err     string
		// StuckSince is the start of a handler call that runs past its
		// deadline + StuckGrace (a handler that ignores its context);
		// zero otherwise.
		StuckSince time.Time
	}
)

// Internal messages: results of the actor's own tasks and timers. Both carry
// the incarnation that started them, so that a restarted actor ignores what
// its previous instance left behind.
type (
	taskResult struct {
		inst uint64
		v    any
	}
	timerFired struct {
		inst uint64
		kind timerKind
		gen  uint64
	}
	// pollWake: the node's Poller found work in the idle shard.
	pollWake struct{ inst uint64 }
)

// Results of tasks (taskResult.v).
type (
	acquired struct {
		lease    persistence.Lease
		restored int
		err      error
		started  time.Time
	}
	advanced struct {
		sent time.Time
		req  persistence.AdvanceRequest
		res  persistence.AdvanceResult
		err  error
		// deadUndone: the retries-exhausted hook returned after its
		// context ended (lease dropped, drain deadline), so its report
		// must stay unconfirmed: the lease (token) is never released,
		// since a release drops the report.
		deadUndone bool
		token      string
	}
	processed struct {
		seq         int64
		failures    []persistence.Failure
		skipped     []string                 // ids not handled (cut by the drain deadline or a cancellation)
		interrupted []string                 // ids of a call cancelled while it ran (its receiver may still be at work)
		states      []persistence.StateWrite // state changes of the calls (stateful queues)
		timers      []persistence.TimerWrite // timer changes of the calls
		emits       []persistence.Emit       // jobs the calls emitted
		snoozes     []persistence.Snooze     // ids the calls snoozed
		deaths      []persistence.Death      // ids the calls declared dead
		discards    []persistence.Discard    // ids the calls discarded
		results     map[string][]byte        // results the calls set (retain_finished)
		expired     bool                     // stopped because the lease view ran out before a call
		paused      bool                     // stopped because the queue was paused before a call
		late        bool                     // stopped because a long window used its time (timeCalls)
		cancelled   int                      // calls stopped or not started because an id was cancelled
		err         error                    // a call's whole-batch error, for logs
		dur         time.Duration
		panicked    string // a concurrent call's panic and stack (callGroup)
	}
	renewed struct {
		lease   persistence.Lease
		started time.Time // send time
		err     error
	}
	relayed struct {
		n, dropped int
		more       bool
		err        error
	}
	released      struct{ err error }
	releasedStale struct{}
	trimmed       struct {
		n        int // morgue entries deleted
		finished int // finished records deleted
		err      error
	}
	// taskPanic reports a panic of a task (a bug in a store or in the
	// processor): it becomes the actor's failure.
	taskPanic struct {
		value any
		stack string
	}
)
