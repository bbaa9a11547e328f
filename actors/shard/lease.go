package shard

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// The lease: acquire, renew every LeaseTTL/3 from the send time of the last
// renewal, guard, release. See "Lease" in the package documentation.

// leaseView is what the handler task reads immediately before every
// handler call: the actor's conservative view of its lease, the instant
// until which the lease surely holds in Redis (the send time of the last
// successful renewal or acquisition + LeaseTTL - margin, on the monotonic
// clock), and whether the queue is paused. The actor sets both.
type leaseView struct {
	mu     sync.Mutex // guards until and paused
	until  time.Time  // zero: no lease
	paused bool
}

func (v *leaseView) set(t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.until = t
}

func (v *leaseView) get() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.until
}

func (v *leaseView) setPaused(p bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.paused = p
}

// isPaused reports whether the queue is paused, as the node last said.
func (v *leaseView) isPaused() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.paused
}

// holds reports whether the lease surely still holds at now.
func (v *leaseView) holds(now time.Time) bool {
	u := v.get()
	return !u.IsZero() && now.Before(u)
}

// margin is how much earlier than Redis the actor counts its lease as
// expired: twice the slowest recent round trip of a lease call, at least
// LeaseTTL/6 and at most LeaseTTL/4.
func (a *Actor) margin() time.Duration {
	ttl := a.cfg.LeaseTTL
	return min(max(ttl/6, 2*a.rtt), ttl/4)
}

// observeRTT records the round trip of a lease call: the slowest recent one
// counts (older samples decay by a quarter per call).
func (a *Actor) observeRTT(d time.Duration) {
	a.rtt = max(d, a.rtt-a.rtt/4)
}

// extend moves the lease view to sent + LeaseTTL - margin (never back) and
// arms the guard there.
func (a *Actor) extend(c actor.Context, sent time.Time) {
	until := sent.Add(a.cfg.LeaseTTL - a.margin())
	if u := a.view.get(); u.After(until) {
		until = u
	}
	a.view.set(until)
	a.arm(c, timerGuard, max(clock.Until(a.cfg.Clock, until), 0))
}

func (a *Actor) startAcquire(c actor.Context) {
	a.phase = phaseAcquiring
	cfg := a.cfg
	timeout := a.storeTimeout()
	a.task(c, func(ctx context.Context) any {
		started := cfg.Clock.Now()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		l, n, err := cfg.Store.AcquireShard(ctx, cfg.Ref, cfg.Owner, cfg.LeaseTTL)
		return acquired{lease: l, restored: n, err: err, started: started}
	})
}

func (a *Actor) onAcquired(c actor.Context, m acquired) {
	a.phase = phaseIdle
	if m.err != nil {
		if errors.Is(m.err, persistence.ErrLeaseHeld) {
			// Try again when the holder's lease would expire, unless its
			// release notice (a Wake) comes first.
			wait := a.cfg.LeaseTTL / 10
			var held *persistence.LeaseHeldError
			if errors.As(m.err, &held) && held.TTL > 0 {
				wait = min(held.TTL, a.cfg.LeaseTTL) + 5*time.Millisecond
			}
			a.log.Debug("shard lease held elsewhere; waiting", "err", m.err, "retry_in", wait)
			a.arm(c, timerRetry, wait+rand.N(20*time.Millisecond))
			return
		}
		a.storeFailed(c, "acquire the shard lease", m.err)
		return
	}
	l := m.lease
	now := a.cfg.Clock.Now()
	a.observeRTT(now.Sub(m.started))
	if !now.Before(m.started.Add(a.cfg.LeaseTTL - a.margin())) {
		// The reply came too late (a paused process, a slow link): the
		// lease may already be gone. Give it back and try again.
		a.log.Warn("shard lease acquired too late to use; releasing it", "epoch", l.Epoch, "round_trip", now.Sub(m.started))
		a.stale = append(a.stale, l)
		a.arm(c, timerRetry, jitter(a.cfg.LeaseTTL/10))
		return
	}
	a.lease, a.seq, a.calls, a.cur, a.settle, a.req = &l, 0, 0, nil, nil, nil
	a.window = 0 // a new lease starts with a window of Prefetch ids
	a.renewDue = false
	a.storeOK(c)
	a.log.Info("serving shard", "epoch", l.Epoch, "restored", m.restored)
	if a.cfg.Renewer != nil {
		a.register(c, m.started)
	} else {
		a.arm(c, timerRenew, max(a.cfg.LeaseTTL/3-now.Sub(m.started), 0))
	}
	a.view.set(time.Time{})
	a.extend(c, m.started)
	a.work.due, a.trimDue = true, a.trims()
	// The first Advance reports what a previous owner left in the outbox.
	a.relayDue, a.relayFails = false, 0
	a.reshard = reshardNone // the first Advance tells
	a.report(c)
}

// startRenew sends a renewal and arms the next one LeaseTTL/3 after this
// send time, so that a slow reply does not space renewals further apart; at
// most one renewal is in flight (a renewal falling due meanwhile goes out
// when the reply comes: renewDue).
func (a *Actor) startRenew(c actor.Context) {
	a.renewing, a.renewDue = true, false
	lease := *a.lease
	cfg := a.cfg
	started := cfg.Clock.Now()
	a.arm(c, timerRenew, cfg.LeaseTTL/3)
	a.task(c, func(ctx context.Context) any {
		ctx, cancel := context.WithTimeout(ctx, cfg.LeaseTTL/2)
		defer cancel()
		return renewed{lease: lease, started: started, err: cfg.Store.RenewShard(ctx, lease, cfg.LeaseTTL)}
	})
}

// register hands the lease, acquired by a call sent at sent, to the node's
// Renewer, which renews it with the other shards' (first LeaseTTL/3 after
// sent at the latest) and sends each result back as a renewed task result.
func (a *Actor) register(c actor.Context, sent time.Time) {
	self, root, inst := c.Self(), c.ActorSystem().Root, a.inst
	a.cfg.Renewer.add(*a.lease, sent, func(m renewed) { root.Send(self, taskResult{inst: inst, v: m}) })
}

// unregister takes the lease back from the node's Renewer, if it has it.
func (a *Actor) unregister() {
	if a.cfg.Renewer != nil && a.lease != nil {
		a.cfg.Renewer.remove(a.cfg.Ref, a.lease.Token)
	}
}

func (a *Actor) onRenewed(c actor.Context, m renewed) {
	a.renewing = false
	now := a.cfg.Clock.Now()
	if a.lease == nil || a.lease.Token != m.lease.Token {
		// The guard fired (or the lease was lost) before this reply: it
		// does not revive the lease. A renewal that succeeded extended it
		// in Redis; give it back rather than leave it to expire (once: a
		// node's Renewer may have renewed it again before it heard that
		// the actor gave it up).
		if m.err == nil && m.lease.Token != a.givenUp && m.lease.Token != a.keep {
			a.stale = append(a.stale, m.lease)
			a.givenUp = m.lease.Token
		}
		return
	}
	switch {
	case m.err == nil:
		a.observeRTT(now.Sub(m.started))
		if !now.Before(m.started.Add(a.cfg.LeaseTTL - a.margin())) {
			// Even this renewal cannot vouch for the lease any more (the
			// process was paused, or the reply took longer than the
			// lease): count it as lost, and give it back.
			a.leaseLost(c, "renewal reply came too late")
			a.stale = append(a.stale, m.lease)
			return
		}
		// The renewal succeeded, so the lease never lapsed in Redis (a
		// renewal fails once the lease key expired): it extends the view
		// from its send time, even if the view had run out meanwhile (no
		// call started while it had).
		a.extend(c, m.started)
		if a.failures > 0 && a.phase == phaseIdle {
			a.storeOK(c)
		}
	case errors.Is(m.err, persistence.ErrLeaseLost) && a.phase == phaseReleasing && a.cfg.Renewer != nil:
		// A batched renewal sent while the release ran: the release's
		// reply tells whether the lease is gone.
		return
	case errors.Is(m.err, persistence.ErrLeaseLost):
		a.leaseLost(c, "renewal refused")
		return
	default:
		a.lastErr = m.err.Error()
		a.log.Warn("cannot renew the shard lease", "err", m.err)
		a.report(c)
	}
	if a.renewDue {
		a.startRenew(c)
	}
}

// leaseLost forgets the lease and cancels the handler at once. The actor
// acquires again once the handler has returned.
func (a *Actor) leaseLost(c actor.Context, why string) {
	a.log.Warn("shard lease lost; handler cancelled, batch left to the next owner", "reason", why)
	if o := a.cfg.Observer; o != nil {
		o.LeaseLost(a.cfg.Ref)
	}
	if o, ok := a.cfg.Observer.(SettleObserver); ok && a.cur != nil && (a.phase == phaseRunning || a.settle != nil) {
		// The window's calls ran (or run) and their settle is not
		// committed: the next owner restores the ids and hands them
		// over again.
		n := len(a.cur.Jobs)
		if a.settle != nil {
			n -= len(a.settle.skipped)
		}
		if n > 0 {
			o.WindowLost(a.cfg.Ref, n)
		}
	}
	a.dropLease()
	if a.phase == phaseRunning {
		a.handler(errLeaseLost)
		a.arm(c, timerStuck, a.cfg.LeaseTTL)
	}
	a.returnPermit(c)
	a.lastErr = "lease lost: " + why
	a.report(c)
	a.arm(c, timerRetry, jitter(a.cfg.LeaseTTL/10))
}

// dropLease forgets the lease and everything done under it: what the
// current call does is restored by the next owner.
func (a *Actor) dropLease() {
	if a.deadCancel != nil {
		a.deadCancel(errLeaseLost)
	}
	a.unregister()
	a.stopPolling()
	a.lease, a.req, a.settle, a.cur, a.expired = nil, nil, nil, nil, nil
	a.renewDue = false
	a.view.set(time.Time{})
	a.disarm(timerRenew)
	a.disarm(timerGuard)
}

func (a *Actor) startRelease(c actor.Context) {
	a.phase = phaseReleasing
	lease := *a.lease
	cfg := a.cfg
	timeout := a.storeTimeout()
	a.task(c, func(ctx context.Context) any {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return released{err: cfg.Store.ReleaseShard(ctx, lease)}
	})
}

func (a *Actor) onReleased(c actor.Context, m released) {
	a.phase = phaseIdle
	if a.lease == nil {
		return // lost meanwhile
	}
	if m.err != nil && !errors.Is(m.err, persistence.ErrLeaseLost) && a.cfg.Clock.Now().Before(a.deadline) {
		a.storeFailed(c, "release the shard lease", m.err)
		return
	}
	if m.err != nil {
		a.log.Warn("could not release the shard lease; it expires by itself", "err", m.err)
	} else {
		a.log.Info("released shard")
	}
	a.dropLease()
	a.report(c)
}

// startReleaseStale gives back the leases this actor no longer counts as
// its own but that a late reply showed it still holds in Redis. It runs
// only while no handler runs (the next owner restores what the lease
// covered); one try each, since they expire by themselves.
func (a *Actor) startReleaseStale(c actor.Context) {
	a.phase = phaseReleasing
	stale := a.stale
	a.stale = nil
	cfg := a.cfg
	log := a.log
	timeout := a.storeTimeout()
	a.task(c, func(ctx context.Context) any {
		for _, l := range stale {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			err := cfg.Store.ReleaseShard(ctx, l)
			cancel()
			if err != nil {
				log.Warn("could not release a lease given up; it expires by itself", "epoch", l.Epoch, "err", err)
			} else {
				log.Info("released a lease given up after a late reply", "epoch", l.Epoch)
			}
		}
		return releasedStale{}
	})
}
