package shard

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/persistence"
)

// phase is what the actor is doing. At most one store call or one handler
// run is in flight at a time, and the phase names it; lease renewals run
// beside it (Actor.renewing). The transitions are drawn in the package
// documentation.
type phase uint8

const (
	// phaseIdle: nothing in flight. step decides what comes next; a
	// backoff (timerRetry) or a pending permit decision may hold it back.
	phaseIdle phase = iota
	// phaseAcquiring: AcquireShard runs.
	phaseAcquiring
	// phaseAdvancing: Advance runs (settle the last batch, fetch the next,
	// or both).
	phaseAdvancing
	// phaseRunning: the handler runs over the fetched batch. It may go on
	// after the lease was lost (the handler was cancelled and has not
	// returned yet): the actor acquires again only once it has.
	phaseRunning
	// phaseTrimming: TrimMorgue runs.
	phaseTrimming
	// phaseReleasing: ReleaseShard runs (draining).
	phaseReleasing
	// phaseRelaying: RelayOutbox runs (emits committed with acks).
	phaseRelaying
	// phaseResharding: a DrainShard step runs (a reshard drains the shard,
	// reshard.go).
	phaseResharding
	// phaseStopping: the actor stops (released while draining, or
	// Stopping/Restarting arrived); it starts nothing any more.
	phaseStopping
)

var phaseNames = [...]string{"idle", "acquiring", "advancing", "running", "trimming", "releasing", "relaying", "resharding", "stopping"}

func (p phase) String() string { return phaseNames[p] }

// permitState is where the actor stands with the node's concurrency permits.
//
//	none ──PermitRequest──▶ asked ──PermitGranted──▶ held ──batch done──▶ deciding
//	 ▲                        ▲                       │  ▲                   │
//	 └──── returnPermit ──────┼───────────────────────┘  └──PermitGranted────┤
//	                          └──────────────PermitWait──────────────────────┘
//
// Only a held permit is given back (returnPermit): while a request is in
// flight (asked, deciding) the actor waits for the node's answer and gives
// an unwanted grant back then, so that the node's count and the actor's
// always agree.
type permitState uint8

const (
	// permitNone: holds no permit and asked for none.
	permitNone permitState = iota
	// permitAsked: sent PermitRequest; PermitGranted will follow.
	permitAsked
	// permitHeld: may fetch and run a batch.
	permitHeld
	// permitDeciding: a batch ended and the actor sent PermitReturn{Again};
	// the node answers PermitGranted (keep) or PermitWait (back in line).
	permitDeciding
)

var permitNames = [...]string{"none", "asked", "held", "deciding"}

func (p permitState) String() string { return permitNames[p] }

// work is what the actor knows about due work in its shard.
type work struct {
	due  bool      // there may be due work: a Wake, a due timer or a poll
	more bool      // the last fetch was full: more is due now
	next time.Time // the next perform_at the store reported (zero: none)
	// early counts the fetches in a row that found nothing due although
	// next had passed on the node's clock: the node's clock runs ahead of
	// the store's, which decides what is due (docs/contract.md §3.3).
	early int
}

// pendingSettle is the outcome of the current batch, to be sent to the
// store with the next Advance.
type pendingSettle struct {
	failures    []persistence.Failure
	skipped     []string
	interrupted []string
	states      []persistence.StateWrite
	timers      []persistence.TimerWrite
	emits       []persistence.Emit
	snoozes     []persistence.Snooze
	deaths      []persistence.Death
	discards    []persistence.Discard
	results     map[string][]byte
	expired     []persistence.Expired
}

func (a *Actor) draining() bool { return !a.deadline.IsZero() }

// returnPermit gives a held permit back to the node.
func (a *Actor) returnPermit(c actor.Context) {
	if a.permit != permitHeld {
		return
	}
	a.permit = permitNone
	c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
}
