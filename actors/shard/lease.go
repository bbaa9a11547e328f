package shard

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// The lease: acquire, renew every LeaseTTL/3, guard, release. See "Lease" in
// the package documentation.

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
	a.lease, a.seq, a.calls, a.cur, a.settle, a.req = &l, 0, 0, nil, nil, nil
	a.storeOK(c)
	a.log.Info("serving shard", "epoch", l.Epoch, "restored", m.restored)
	a.arm(c, timerRenew, a.cfg.LeaseTTL/3)
	a.arm(c, timerGuard, a.guardAfter(clock.Since(a.cfg.Clock, m.started)))
	a.work.due, a.trimDue = true, a.cfg.MorgueTTL > 0
	a.report(c)
}

// guardAfter returns when the lease guard fires, for a renewal (or the
// acquisition) that started ago before now: at start + LeaseTTL - LeaseTTL/6,
// so that the lease is treated as lost before it can expire in Redis.
func (a *Actor) guardAfter(ago time.Duration) time.Duration {
	ttl := a.cfg.LeaseTTL
	return max(ttl-ttl/6-ago, 0)
}

func (a *Actor) startRenew(c actor.Context) {
	a.renewing = true
	lease := *a.lease
	cfg := a.cfg
	a.task(c, func(ctx context.Context) any {
		started := cfg.Clock.Now()
		ctx, cancel := context.WithTimeout(ctx, cfg.LeaseTTL/2)
		defer cancel()
		return renewed{started: started, err: cfg.Store.RenewShard(ctx, lease, cfg.LeaseTTL)}
	})
}

func (a *Actor) onRenewed(c actor.Context, m renewed) {
	a.renewing = false
	if a.lease == nil {
		return
	}
	a.arm(c, timerRenew, a.cfg.LeaseTTL/3)
	switch {
	case m.err == nil:
		a.arm(c, timerGuard, a.guardAfter(clock.Since(a.cfg.Clock, m.started)))
		if a.failures > 0 && a.phase == phaseIdle {
			a.storeOK(c)
		}
	case errors.Is(m.err, persistence.ErrLeaseLost):
		a.leaseLost(c, "renewal refused")
	default:
		a.lastErr = m.err.Error()
		a.log.Warn("cannot renew the shard lease", "err", m.err)
		a.report(c)
	}
}

// leaseLost forgets the lease and cancels the handler at once. The actor
// acquires again once the handler has returned.
func (a *Actor) leaseLost(c actor.Context, why string) {
	a.log.Warn("shard lease lost; handler cancelled, batch left to the next owner", "reason", why)
	if o := a.cfg.Observer; o != nil {
		o.LeaseLost(a.cfg.Ref)
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
	a.lease, a.req, a.settle, a.cur = nil, nil, nil, nil
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
