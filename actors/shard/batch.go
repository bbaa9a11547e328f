package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/shardctx"
	"github.com/orderlyhq/orderly/persistence"
)

// Batches: Advance (settle the last batch and fetch the next in one call),
// the handler run over a fetched batch, and the morgue's retention.

// Morgue retention: how often it runs per shard. An entry is deleted at
// most trimEvery(ttl) after it expired: a minute, or a tenth of a short
// morgue_ttl (at least a second). A run that finds nothing expired is one
// O(log n) script call (docs/contract.md §3.8).
const (
	trimMaxEvery = time.Minute
	trimMinEvery = time.Second
)

// trimEvery is the morgue retention's period for a morgue_ttl of ttl.
func trimEvery(ttl time.Duration) time.Duration {
	return min(trimMaxEvery, max(trimMinEvery, ttl/10))
}

// newRequest prepares the next Advance: settle the pending outcome, if any,
// and fetch up to fetch ids.
func (a *Actor) newRequest(fetch int) {
	a.seq++
	req := persistence.AdvanceRequest{Fetch: fetch, NextSeq: a.seq, MaxRetryCount: a.cfg.MaxRetryCount,
		MaxPayloads: a.cfg.MaxPayloads, CallTimeout: a.cfg.CallTimeout, CallSize: a.cfg.BatchSize}
	if fetch > a.cfg.Prefetch {
		req.MaxCalls = a.timeCalls()
	}
	if a.settle != nil && a.cur != nil {
		req.Settle = a.cur.Seq
		req.Failures = a.settle.failures
		req.Skipped = a.settle.skipped
		req.Interrupted = a.settle.interrupted
		req.StateWrites = a.settle.states
		req.TimerWrites = a.settle.timers
		req.Emits = a.settle.emits
		req.Snoozes, req.Deaths, req.Discards = a.settle.snoozes, a.settle.deaths, a.settle.discards
		req.Results = a.settle.results
		req.Expired = a.settle.expired
		a.setConflictDelays(&req)
	}
	req.Stateful, req.MaxStateBytes = a.cfg.Stateful, a.cfg.MaxStateBytes
	if a.retains() {
		req.RetainFinished, req.MaxFinished = a.cfg.RetainFinished, a.cfg.MaxFinished
	}
	if a.cfg.Stateful {
		req.FeedMaxLen = a.cfg.FeedMaxLen
	}
	// The first call under a new lease looks for emits a previous owner
	// committed and did not relay (it died first).
	// So does the first after the poller woke the actor: the poll may
	// have found entries nobody relayed.
	req.CheckOutbox = a.seq == 1 || a.lookOutbox
	a.lookOutbox = false
	if fetch > 0 {
		a.work.due = false
	}
	a.req, a.sends = &req, 0
}

func (a *Actor) startAdvance(c actor.Context) {
	a.phase = phaseAdvancing
	a.stopPolling() // no longer idle
	if a.sends++; a.sends > 1 && a.req.Settle != 0 {
		// The same settle again: the window's outcome, kept in the
		// actor, not a new handler call.
		if o, ok := a.cfg.Observer.(SettleObserver); ok {
			o.SettleRetried(a.cfg.Ref)
		}
	}
	req := *a.req
	lease := *a.lease
	cfg := a.cfg
	log := a.log
	timeout := a.storeTimeout()
	// The hook's context ends when the lease is dropped or the drain
	// deadline passes (deadCancel), not with the store call's timeout.
	hookCtx, hookCancel := context.WithCancelCause(a.base)
	a.deadCancel = hookCancel
	a.task(c, func(base context.Context) any {
		defer hookCancel(nil)
		sent := cfg.Clock.Now()
		ctx, cancel := context.WithTimeout(base, timeout)
		defer cancel()
		res, err := cfg.Store.Advance(ctx, lease, req)
		undone := false
		if err == nil && len(res.Dead) > 0 {
			log.Warn("retries exhausted: payloads moved to the morgue", "ids", len(res.Dead))
			if cfg.OnDead != nil {
				callOnDead(shardctx.With(hookCtx, cfg.Ref), cfg.OnDead, res.Dead, log)
				// A hook that returned after its context ended may not
				// have done its work: the report stays unconfirmed.
				undone = hookCtx.Err() != nil
			}
		}
		return advanced{sent: sent, req: req, res: res, err: err, deadUndone: undone, token: lease.Token}
	})
}

func (a *Actor) onAdvanced(c actor.Context, m advanced) {
	a.phase = phaseIdle
	if m.deadUndone {
		a.keepForReport(m.token)
	}
	if a.lease == nil {
		return // lost meanwhile; what this call did is restored by the next owner
	}
	if m.err != nil {
		if errors.Is(m.err, persistence.ErrLeaseLost) {
			a.leaseLost(c, "the store refused the lease")
			return
		}
		a.storeFailed(c, "advance", m.err)
		return
	}
	if m.deadUndone {
		// The next call would confirm the dead report the hook may not
		// have handled: the lease is left to expire instead, and the next
		// owner reports it again (at least once, docs/contract.md §3.5).
		// (keepForReport above: no release of it either).
		a.leaseLost(c, "the retries-exhausted hook did not finish before the lease or the drain ended")
		return
	}
	a.req = nil
	a.storeOK(c)
	if m.req.Settle != 0 {
		a.countConflicts(a.cur, m.res.Conflicts)
		a.settle, a.cur, a.expired = nil, nil, nil
	}
	if len(m.res.Conflicts) > 0 {
		a.log.Info("state changed from outside while ids were in flight; their calls committed nothing and they are handed over again after a short delay", "ids", len(m.res.Conflicts))
	}
	if m.res.Restored > 0 && len(m.req.Skipped) == 0 {
		// (With skipped ids, Restored counts those going back.)
		a.log.Warn("an in-flight batch this owner no longer tracked went back to the queue", "ids", m.res.Restored)
	}
	if m.res.Outbox > 0 {
		a.relayDue = true
	}
	a.noteReshard(m.res)
	a.work.more, a.work.next = m.res.More, m.res.NextDue
	got := 0
	if m.res.Batch != nil {
		got = len(m.res.Batch.Jobs)
	}
	a.fetchedWindow(m.req.Fetch, got, m.res.More)
	if b := m.res.Batch; b != nil {
		a.work.early = 0
		a.cur, a.sent = b, m.sent
		a.expired = dropExpired(b)
		if len(a.expired) > 0 {
			a.log.Info("payloads expired before they were handed over; discarded", "payloads", expiredPayloads(a.expired))
		}
		if a.draining() {
			// Not started: settle every id as skipped, so that they go
			// back as they were, due at once, before the release. Left to
			// the release, they would wait for their calls' deadline bound
			// (up to the call timeout) as if a call of them could be
			// running, and the next owner would not fetch them until then.
			skipped := make([]string, len(b.Jobs))
			for i, j := range b.Jobs {
				skipped[i] = j.ID
			}
			a.settle = &pendingSettle{skipped: skipped, expired: a.expired}
			a.returnPermit(c)
			return
		}
		a.startHandler(c, b)
		return
	}
	a.cur = nil
	if m.req.Fetch == 0 && a.permit == permitHeld && !a.draining() {
		// The node granted the permit while a settle-only step ran (the
		// shard had yielded its turn): the grant is for a fetch, which
		// step starts now. Given back here, the shard's queued work would
		// wait for its next poll.
		return
	}
	a.returnPermit(c)
	if !a.draining() {
		if !a.work.next.IsZero() {
			a.arm(c, timerDue, a.dueIn()+time.Millisecond)
		}
		a.idlePoll(c)
	}
}

// idlePoll has the idle actor's shard polled: by the node's Poller, or by
// its own timer without one.
func (a *Actor) idlePoll(c actor.Context) {
	if a.cfg.Poller == nil {
		a.arm(c, timerPoll, a.cfg.IdlePoll)
		return
	}
	if !a.polling {
		self, root, inst := c.Self(), c.ActorSystem().Root, a.inst
		a.cfg.Poller.add(a.cfg.Ref, inst, func() { root.Send(self, pollWake{inst: inst}) })
		a.polling = true
	}
}

// stopPolling takes the actor's shard back from the node's Poller, if it
// has it.
func (a *Actor) stopPolling() {
	if a.polling {
		a.cfg.Poller.remove(a.cfg.Ref, a.inst)
		a.polling = false
	}
}

// dueIn returns how long to wait before fetching the job the store said is
// due next. The store compares due times with its own clock: when the
// job's time has passed on the node's clock and yet a fetch found nothing
// due, the node's clock runs ahead, and the wait doubles from 1 ms up to
// the idle poll instead of fetching in a loop until the store's clock
// catches up.
func (a *Actor) dueIn() time.Duration {
	d := clock.Until(a.cfg.Clock, a.work.next)
	if d > 0 {
		a.work.early = 0
		return d
	}
	a.work.early++
	return min(time.Millisecond<<min(a.work.early-1, 20), a.cfg.IdlePoll)
}

func (a *Actor) onProcessed(c actor.Context, m processed) {
	a.phase, a.handler = phaseIdle, nil
	a.disarm(timerStuck)
	if !a.stuck.IsZero() {
		a.log.Warn("stuck handler call returned", "age", clock.Since(a.cfg.Clock, a.stuck))
		a.stuck = time.Time{}
		if o, ok := a.cfg.Observer.(StuckObserver); ok {
			o.HandlerStuck(a.cfg.Ref, 0)
		}
		a.report(c)
	}
	if a.lease == nil || a.cur == nil || a.cur.Seq != m.seq {
		return // lease lost meanwhile: the next owner restores the batch
	}
	if m.expired {
		a.leaseLost(c, "the lease could have expired before the next handler call")
		return
	}
	a.ranWindow(m, len(a.cur.Jobs))
	switch {
	case m.late && len(m.interrupted) == 0:
		a.log.Info("long window ran out of time; the ids not handled go back to the queue", "ids", len(a.cur.Jobs), "skipped", len(m.skipped))
	case m.paused && len(m.interrupted) == 0:
		a.log.Info("queue paused; the ids not handled go back to the queue", "ids", len(a.cur.Jobs), "skipped", len(m.skipped))
	case m.cancelled > 0:
		a.log.Info("cancelled ids' calls were stopped; the other ids of those calls go back to the queue", "ids", len(a.cur.Jobs), "cancelled", m.cancelled, "interrupted", len(m.interrupted))
	case len(m.skipped) > 0 || len(m.interrupted) > 0:
		a.log.Warn("batch cut by shutdown; the ids not handled go back to the queue", "ids", len(a.cur.Jobs), "skipped", len(m.skipped), "interrupted", len(m.interrupted))
	case m.err != nil:
		a.log.Warn("batch failed", "ids", len(a.cur.Jobs), "failed", len(m.failures), "err", m.err, "duration", m.dur)
	case len(m.failures) > 0:
		a.log.Info("batch partly failed", "ids", len(a.cur.Jobs), "failed", len(m.failures), "duration", m.dur)
	}
	a.logOutcomes(m)
	a.settle = &pendingSettle{failures: m.failures, skipped: m.skipped, interrupted: m.interrupted, states: m.states, timers: m.timers, emits: m.emits,
		snoozes: m.snoozes, deaths: m.deaths, discards: m.discards, results: m.results, expired: a.expired}
	if a.permit != permitHeld {
		return
	}
	if a.draining() {
		a.returnPermit(c)
		return
	}
	a.permit = permitDeciding
	c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref, Again: true, Since: a.since()})
}

// checkStuck runs on timerStuck while a handler runs: a call past its
// deadline + StuckGrace (or one cancelled that has not returned) is logged
// with its age, reported in the shard's status and to the observer, and
// checked again every LeaseTTL (at least every 10 s), so the log line
// repeats at a bounded rate.
func (a *Actor) checkStuck(c actor.Context) {
	now := a.cfg.Clock.Now()
	start, deadline := a.call.get()
	every := max(a.cfg.LeaseTTL, 10*time.Second)
	if a.handler != nil && a.lease != nil && !a.draining() && now.Before(deadline.Add(StuckGrace)) {
		a.arm(c, timerStuck, deadline.Add(StuckGrace).Sub(now))
		return
	}
	if a.lease == nil || a.draining() {
		// Cancelled (lease lost, drain deadline) and not returned.
		every = a.cfg.LeaseTTL
		a.log.Error("handler ignores its cancelled context; the shard waits for it (another node may already serve these ids)", "age", now.Sub(start))
	} else {
		a.log.Error("handler call runs past its deadline; it ignores its context and holds the shard", "age", now.Sub(start), "deadline", deadline)
	}
	if a.stuck.IsZero() {
		a.stuck = start
		a.report(c)
	}
	if o, ok := a.cfg.Observer.(StuckObserver); ok {
		o.HandlerStuck(a.cfg.Ref, now.Sub(start))
	}
	a.arm(c, timerStuck, every)
}

// callContexts hands out the deadline contexts of the calls of one fetched
// window. Each ends at its call's deadline (on the actor's clock) with cause
// ErrCallDeadline, and at once when the window's context (the lease, the
// drain) is cancelled. A call may reuse the previous call's deadline context
// while that one is live and its deadline is at most slack earlier than the
// call's own (never later): the calls of a busy window then cost no timer
// each, and a call's deadline is still at most CallTimeout after its start.
// The handler gets a child of it that ends when its call returns. The context reports the deadline in real time (what net/http and
// receivers understand); a simulated clock cancels it through its own timer.
type callContexts struct {
	parent   context.Context
	clk      clock.Clock
	slack    time.Duration
	ctx      context.Context // the current context; nil before the first call
	deadline time.Time       // ctx's deadline, on clk
	cancel   func()
	spent    []func() // the cancel functions of earlier contexts
}

// callSlack is how much earlier than its own deadline a call's shared
// context may end: 1% of the call timeout, at most 100 ms.
func callSlack(timeout time.Duration) time.Duration { return min(timeout/100, 100*time.Millisecond) }

// get returns the context of a call due to end by deadline, and the
// deadline it actually has.
func (cs *callContexts) get(deadline time.Time) (context.Context, time.Time) {
	if cs.ctx != nil && cs.ctx.Err() == nil && !cs.deadline.After(deadline) && !cs.deadline.Before(deadline.Add(-cs.slack)) {
		return cs.ctx, cs.deadline
	}
	if cs.cancel != nil {
		// Calls of a concurrent window may still run on it: it ends
		// with the window (close), or at its own deadline.
		cs.spent = append(cs.spent, cs.cancel)
	}
	left := clock.Until(cs.clk, deadline)
	ctx, cancel := context.WithDeadlineCause(cs.parent, time.Now().Add(left), ErrCallDeadline)
	cs.cancel = cancel
	if cs.clk != clock.Real() {
		cctx, ccancel := context.WithCancelCause(ctx)
		stop := cs.clk.AfterFunc(left, func() { ccancel(ErrCallDeadline) })
		cs.cancel = func() { stop(); ccancel(nil); cancel() }
		ctx = cctx
	}
	cs.ctx, cs.deadline = ctx, deadline
	return ctx, deadline
}

// close cancels every context handed out.
func (cs *callContexts) close() {
	if cs.cancel != nil {
		cs.cancel()
	}
	for _, cancel := range cs.spent {
		cancel()
	}
	cs.ctx, cs.cancel, cs.spent = nil, nil, nil
}

// callOnDead runs the retries-exhausted hook, its context carrying the
// shard (internal/shardctx); a panic in it is logged.
func callOnDead(ctx context.Context, fn func(context.Context, []persistence.Job), dead []persistence.Job, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("retries_exhausted hook panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn(ctx, dead)
}

// retains reports whether the shard keeps finished records: the queue
// sets retain_finished.
func (a *Actor) retains() bool {
	return a.cfg.RetainFinished > 0
}

// trims reports whether the shard has a retention to enforce: the
// morgue's, or its finished records'.
func (a *Actor) trims() bool { return a.cfg.MorgueTTL > 0 || a.retains() }

// trimPeriod is the retention's period: that of the shorter retention.
func (a *Actor) trimPeriod() time.Duration {
	ttl := a.cfg.MorgueTTL
	if a.retains() && (ttl <= 0 || a.cfg.RetainFinished < ttl) {
		ttl = a.cfg.RetainFinished
	}
	return trimEvery(ttl)
}

func (a *Actor) startTrim(c actor.Context) {
	a.phase, a.trimDue = phaseTrimming, false
	cfg := a.cfg
	timeout := a.storeTimeout()
	retains := a.retains()
	a.task(c, func(ctx context.Context) any {
		var out trimmed
		if cfg.MorgueTTL > 0 {
			out.n, out.err = trimRounds(ctx, timeout, func(ctx context.Context) (int, error) {
				return cfg.Store.TrimMorgue(ctx, cfg.Ref, cfg.Clock.Now().Add(-cfg.MorgueTTL), 500)
			})
		}
		if retains {
			n, err := trimRounds(ctx, timeout, func(ctx context.Context) (int, error) {
				return cfg.Store.TrimFinished(ctx, cfg.Ref, cfg.Clock.Now().Add(-cfg.RetainFinished), 500)
			})
			out.finished, out.err = n, errors.Join(out.err, err)
		}
		return out
	})
}

// trimRounds runs a retention's trim call until it deletes fewer than 500
// entries, at most 10,000 entries per run, and returns how many it deleted.
func trimRounds(ctx context.Context, timeout time.Duration, trim func(context.Context) (int, error)) (int, error) {
	total := 0
	for range 20 {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		n, err := trim(ctx)
		cancel()
		total += n
		if err != nil || n < 500 {
			return total, err
		}
	}
	return total, nil
}

func (a *Actor) onTrimmed(c actor.Context, m trimmed) {
	a.phase = phaseIdle
	if m.err != nil {
		a.log.Warn("morgue retention failed", "err", m.err)
	} else if m.n > 0 {
		a.log.Info("morgue retention deleted old entries", "entries", m.n)
	}
	if m.finished > 0 {
		a.log.Debug("finished-id retention deleted old records", "records", m.finished)
	}
	if a.lease != nil && !a.draining() {
		a.arm(c, timerTrim, a.trimPeriod())
	}
}

// logOutcomes logs the outcomes the handler chose for ids of the window
// (docs/contract.md §3.11): discards and deaths at info with their reasons,
// snoozes at debug.
func (a *Actor) logOutcomes(m processed) {
	for _, d := range m.discards {
		a.log.Info("handler discarded an id; its payloads are dropped", "job_id", d.ID, "reason", d.Reason)
	}
	for _, d := range m.deaths {
		a.log.Info("handler declared an id dead; its payloads go to the morgue", "job_id", d.ID, "reason", d.Reason)
	}
	for _, s := range m.snoozes {
		a.log.Debug("handler snoozed an id", "job_id", s.ID, "until", s.RetryAt)
	}
}

// keepForReport leaves the lease of token to expire: the dead report of its
// last Advance is unconfirmed (its hook did not finish), and a release
// (release.lua) would drop it, so the next owner would never report it. A
// late renewal reply that showed the lease still held does not give it
// back (onRenewed), nor does one that already did (stale).
func (a *Actor) keepForReport(token string) {
	a.keep = token
	a.stale = slices.DeleteFunc(a.stale, func(l persistence.Lease) bool { return l.Token == token })
}
