package shard

import (
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Timers: every timer runs on the actor's clock and comes back as a
// timerFired message. Re-arming a timer makes its earlier firing stale (gens).

type timerKind int

const (
	timerDue      timerKind = iota // next perform_at the store reported
	timerPoll                      // idle poll (enqueue notices are hints), without a Poller
	timerRenew                     // lease renewal, LeaseTTL/3 after the last one was sent
	timerGuard                     // lease guard: the lease counts as lost
	timerRetry                     // backoff before retrying a store call or an acquisition
	timerDeadline                  // drain deadline
	timerTrim                      // morgue retention
	timerStuck                     // a handler call past its deadline, or cancelled, that has not returned
	timerRelay                     // backoff before relaying the outbox again
	numTimers
)

func (a *Actor) arm(c actor.Context, k timerKind, d time.Duration) {
	a.disarm(k)
	a.gens[k]++
	gen := a.gens[k]
	self, root := c.Self(), c.ActorSystem().Root
	inst := a.inst
	a.timers[k] = a.cfg.Clock.AfterFunc(d, func() { root.Send(self, timerFired{inst: inst, kind: k, gen: gen}) })
}

func (a *Actor) disarm(k timerKind) {
	if stop := a.timers[k]; stop != nil {
		stop()
		a.timers[k] = nil
	}
}

func (a *Actor) armed(k timerKind) bool { return a.timers[k] != nil }

func (a *Actor) onTimer(c actor.Context, m timerFired) {
	if m.gen != a.gens[m.kind] || a.timers[m.kind] == nil {
		return // stale
	}
	a.timers[m.kind] = nil
	switch m.kind {
	case timerDue, timerPoll:
		a.work.due = true
	case timerRenew:
		switch {
		case a.lease == nil:
		case a.renewing:
			a.renewDue = true // at most one in flight: send when it returns
		default:
			a.startRenew(c)
		}
	case timerGuard:
		if a.lease != nil {
			a.leaseLost(c, "could not renew the lease before it could expire")
		}
	case timerRetry, timerRelay:
		// step retries what failed
	case timerTrim:
		a.trimDue = a.lease != nil && !a.draining()
	case timerDeadline:
		a.onDeadline(c)
	case timerStuck:
		if a.phase == phaseRunning {
			a.checkStuck(c)
		}
	}
}

// jitter returns d plus up to 50% more, so that shards do not move in step.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/2+1)
}
