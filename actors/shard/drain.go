package shard

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/internal/clock"
)

// Drain: stop fetching, finish or cut the batch, settle, release, stop. See
// "Drain and stop" in the package documentation.

// onDrain starts draining, or brings the deadline of a running drain
// forward; a Drain with a later deadline changes nothing.
func (a *Actor) onDrain(c actor.Context, m Drain) {
	if a.draining() && !m.Deadline.Before(a.deadline) {
		return
	}
	first := !a.draining()
	a.deadline = m.Deadline
	if first {
		a.work = work{}
		a.trimDue = false
		a.disarm(timerDue)
		a.disarm(timerPoll)
		a.stopPolling()
		a.disarm(timerTrim)
		if a.phase == phaseIdle {
			a.returnPermit(c) // a permit held for a fetch not started yet
		}
		a.report(c)
	}
	a.arm(c, timerDeadline, max(clock.Until(a.cfg.Clock, a.deadline), 0))
}

// onDeadline cuts the running handler; a drain that cannot settle because
// the store is down gives up, leaving the lease to expire.
func (a *Actor) onDeadline(c actor.Context) {
	if a.deadCancel != nil {
		a.deadCancel(errDrainDeadline) // a retries-exhausted hook still at work gives up
	}
	if a.phase == phaseRunning {
		a.handler(errDrainDeadline)
		a.arm(c, timerStuck, a.cfg.LeaseTTL)
	}
	if a.phase != phaseIdle || a.lease == nil {
		return
	}
	// Out of time and not settled yet (the store may be down): give up
	// settling; the lease expires by itself and the next owner restores.
	if a.failures > 0 {
		a.log.Warn("drain deadline passed with the store unreachable; leaving the shard to lease expiry")
		a.dropLease()
		a.disarm(timerRetry)
		a.report(c)
	}
}
