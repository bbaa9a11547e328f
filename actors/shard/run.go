package shard

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/deferred"
	"github.com/orderlyhq/orderly/persistence"
)

// The handler run: a fetched window goes through the processor BatchSize ids
// per call, one call after the other (up to ConcurrentCalls calls at once,
// calls.go), in a task of the actor. Before each call the run takes a
// rate_limit token, and stops, leaving the rest of the window untouched,
// when it was cancelled (drain deadline, lease lost), when the lease view
// has run out, when a long window ran out of time, or when the queue was
// paused.

// startHandler runs the fetched batch through the processor. A
// cancellation stops it between calls, and a call cut by the drain deadline
// counts as not handled: the ids not handled are skipped, so that they go
// back to the queue untouched.
func (a *Actor) startHandler(c actor.Context, b *persistence.Batch) {
	hctx, cancel := context.WithCancelCause(a.base)
	a.phase, a.handler = phaseRunning, cancel
	a.call.window(b.Jobs)
	r := &windowRun{cfg: a.cfg, ctx: hctx, batch: b, first: a.calls, view: a.view, sent: a.sent, running: a.call, pool: a.pool}
	// A window longer than Prefetch ids shares the deadline bound of a
	// window of Prefetch ids (timeCalls calls): its calls past those
	// start only while at least half a call timeout of it is left.
	r.bounded = len(b.Jobs) > a.cfg.Prefetch
	r.tcalls = a.timeCalls()
	r.last = r.sent.Add(time.Duration(r.tcalls)*a.cfg.CallTimeout - a.cfg.CallTimeout/2)
	a.arm(c, timerStuck, a.cfg.CallTimeout+StuckGrace)
	a.calls += int64((len(b.Jobs) + a.cfg.BatchSize - 1) / a.cfg.BatchSize)
	a.task(c, func(context.Context) any {
		out := r.run()
		r.running.finish()
		cancel(nil)
		return out
	})
}

// windowRun is one handler run over a fetched window; it lives in the
// actor's task and shares with the actor only the lease view and the
// running call's record (both guarded).
type windowRun struct {
	cfg     Config
	ctx     context.Context // cancelled with a cause: drain deadline, lease lost, stop
	batch   *persistence.Batch
	first   int64 // handler calls made under this lease before this window
	view    *leaseView
	sent    time.Time // when the fetch was sent: call deadlines count from it
	running *callInfo
	pool    *callPool // the actor's goroutines of concurrent calls
	bounded bool      // the window is longer than Prefetch ids
	tcalls  int       // calls a window of Prefetch ids makes (timeCalls)
	last    time.Time // a bounded window's calls past tcalls start only before it
}

func (r *windowRun) run() processed {
	b, size := r.batch, r.cfg.BatchSize
	out := processed{seq: b.Seq}
	start := r.cfg.Clock.Now()
	ctxs := callContexts{parent: r.ctx, clk: r.cfg.Clock, slack: callSlack(r.cfg.CallTimeout)}
	defer ctxs.close()
	var g *callGroup
	if r.cfg.ConcurrentCalls > 1 && len(b.Jobs) > size {
		g = newCallGroup(r.cfg.ConcurrentCalls, (len(b.Jobs)+size-1)/size, r.pool)
	}
	var seq struct { // the calls of a sequential window share them: each call's fields are set anew
		batch persistence.Batch
		rc    runningCall
	}
	for i, k := 0, r.first; i < len(b.Jobs); i, k = i+size, k+1 {
		if g != nil {
			g.acquire()
		}
		if !r.mayStart(i/size, &out) {
			if g != nil {
				g.release()
			}
			out.skip(b.Jobs[i:])
			break
		}
		jobs := b.Jobs[i:min(i+size, len(b.Jobs))]
		if g != nil {
			gc := g.call()
			gc.r, gc.batch = r, persistence.Batch{ShardRef: b.ShardRef, Seq: k + 1, Token: b.Token, FetchedAt: b.FetchedAt, Jobs: jobs}
			r.prepare(&ctxs, i/size, jobs, &gc.rc)
			g.start(gc)
			continue
		}
		seq.batch = persistence.Batch{ShardRef: b.ShardRef, Seq: k + 1, Token: b.Token, FetchedAt: b.FetchedAt, Jobs: jobs}
		r.prepare(&ctxs, i/size, jobs, &seq.rc)
		if !r.call(&seq.rc, &seq.batch, &out) {
			out.skip(b.Jobs[i+len(jobs):])
			break
		}
	}
	if g != nil {
		// A call cancelled while it ran (drain deadline, lease lost)
		// ended the run at the next mayStart, as in a sequential window.
		g.wait(&out)
	}
	out.dur = clock.Since(r.cfg.Clock, start)
	return out
}

// mayStart reports whether the window's n-th call may start; when not, it
// records why on out.
func (r *windowRun) mayStart(n int, out *processed) bool {
	if r.ctx.Err() != nil {
		return false
	}
	if r.cfg.RateLimit != nil {
		if err := takeToken(r.ctx, r.cfg); err != nil {
			return false
		}
	}
	if !r.view.holds(r.cfg.Clock.Now()) {
		// The lease may be gone (the process was paused, renewals are
		// late): no call starts under it. The lease guard may not have
		// fired yet; onProcessed treats it as lost.
		out.expired = true
		return false
	}
	if r.bounded && n >= r.tcalls && !r.cfg.Clock.Now().Before(r.last) {
		// The window ran as long as a window of Prefetch ids may: the
		// rest goes back untouched.
		out.late = true
		return false
	}
	if r.view.isPaused() {
		// The queue was paused after the fetch: no new call starts; the
		// rest of the window goes back untouched.
		out.paused = true
		return false
	}
	return true
}

// prepare sets rc to the window's n-th call, of jobs, about to start: its
// start, deadline and deadline context.
func (r *windowRun) prepare(ctxs *callContexts, n int, jobs []persistence.Job, rc *runningCall) {
	callStart := r.cfg.Clock.Now()
	// The call's deadline: CallTimeout after its start, and within
	// n x CallTimeout of the fetch for the n-th call of the window (the
	// bound the store keeps with the in-flight record; n at most timeCalls
	// in a window longer than Prefetch ids).
	deadline := callStart.Add(r.cfg.CallTimeout)
	nth := n + 1
	if r.bounded {
		nth = min(nth, r.tcalls)
	}
	if bound := r.sent.Add(time.Duration(nth) * r.cfg.CallTimeout); bound.Before(deadline) {
		deadline = bound
	}
	ctx, deadline := ctxs.get(deadline)
	*rc = runningCall{start: callStart, deadline: deadline, ctx: ctx, ids: jobs}
}

// call makes the handler call rc of a sequential window and records its
// outcome on out; false when the run was cancelled while it ran (its ids
// count as interrupted, and the run ends).
func (r *windowRun) call(rc *runningCall, call *persistence.Batch, out *processed) bool {
	// The call's own context ends when it returns, so that what it left
	// running sees the call is over; the shared one only carries the
	// deadline on to the next call.
	ctx, endCall := context.WithCancelCause(rc.ctx)
	rc.stop = endCall
	defer endCall(nil)
	if !r.running.begin(rc) {
		// An id of the call was cancelled before it started
		// (docs/contract.md §3.13): the call does not run; its ids go back
		// untouched, and the store disposes of the cancelled one.
		out.cancelled++
		out.skip(call.Jobs)
		return true
	}
	fs, err := r.cfg.Process(ctx, call)
	return r.settle(rc, ctx, nil, call, fs, err, out)
}

// groupCall makes the handler call of gc, of a concurrent window, and
// records its outcome on gc's part, unless the handler held the call
// (internal/deferred): then it reports true, and gc.end settles the call
// when its holder ends it. Until the shard's handler held a call, a call
// has a context of its own, as a sequential one; after, the window's
// deadline context carries the call to the handler.
func (r *windowRun) groupCall(gc *groupCall) (held bool) {
	rc, call := &gc.rc, &gc.batch
	rc.d = deferred.New(rc.ctx, gc.end)
	ctx := rc.ctx
	if !r.pool.holds.Load() {
		var endCall context.CancelCauseFunc
		ctx, endCall = context.WithCancelCause(rc.ctx)
		rc.stop = endCall
		defer endCall(nil)
	}
	if !r.running.begin(rc) {
		gc.part.cancelled++
		gc.part.skip(call.Jobs)
		return false
	}
	fs, err := r.cfg.Process(deferred.With(ctx, rc.d), call)
	if rc.d.Held() && errors.Is(err, deferred.ErrHeld) {
		r.pool.holds.Store(true)
		return true
	}
	if !rc.d.Settled() {
		// Held, a middleware replaced ErrHeld, and the holder ended the
		// call already: end settled it.
		return true
	}
	r.settle(rc, ctx, rc.d, call, fs, err, &gc.part)
	return false
}

// settle records on out the outcome of the call rc, which returned fs and
// err; ctx is the context the call had, d the call as a handler may hold it
// (nil in a sequential window). It reports false when the run was
// cancelled while the call ran (its ids count as interrupted, and the run
// ends).
func (r *windowRun) settle(rc *runningCall, ctx context.Context, d *deferred.Call, call *persistence.Batch, fs []persistence.Failure, err error, out *processed) bool {
	callStart := rc.start
	timedOut := errors.Is(context.Cause(ctx), ErrCallDeadline)
	cancelled := r.running.end(rc) && (errors.Is(context.Cause(ctx), persistence.ErrCancelled) ||
		d != nil && errors.Is(d.Cause(), persistence.ErrCancelled))
	chose := len(call.Snoozes) + len(call.Deaths) + len(call.Discards)
	if cancelled && (err != nil || len(fs) > 0 || chose > 0) {
		// Stopped by a cancel of one of its ids: the call's ids are
		// interrupted (not failed), and the store disposes of the
		// cancelled one; the window goes on.
		out.cancelled++
		for _, j := range call.Jobs {
			out.interrupted = append(out.interrupted, j.ID)
		}
		return true
	}
	if r.ctx.Err() != nil && (err != nil || len(fs) > 0 || chose > 0) {
		// Cancelled while it ran (drain deadline, lease lost): not
		// handled, not failed; its receiver may still be at work, so the
		// store holds its ids until the call's deadline.
		for _, j := range call.Jobs {
			out.interrupted = append(out.interrupted, j.ID)
		}
		return false
	}
	if o := r.cfg.Observer; o != nil {
		o.BatchDone(r.batch.ShardRef, len(call.Jobs), len(fs), clock.Since(r.cfg.Clock, callStart), err)
	}
	if timedOut {
		notBefore(fs, callStart.Add(2*r.cfg.CallTimeout))
		snoozeNotBefore(call.Snoozes, callStart.Add(2*r.cfg.CallTimeout))
	}
	out.merge(&processed{failures: fs, states: call.StateWrites, timers: call.TimerWrites, emits: call.Emits,
		snoozes: call.Snoozes, deaths: call.Deaths, discards: call.Discards, results: call.Results, err: err})
	return true
}

// snoozeNotBefore makes the snoozes of a timed-out call due no earlier than
// at, as notBefore does for failures (a snooze puts the id's queued
// payloads off with it).
func snoozeNotBefore(sn []persistence.Snooze, at time.Time) {
	for i := range sn {
		if sn[i].RetryAt.Before(at) {
			sn[i].RetryAt = at
		}
	}
}

// notBefore makes the failures of a timed-out call due no earlier than at,
// and holds their ids until then whatever the settlement does with them.
// The call was given up at its deadline, but its handler's side effects
// (a webhook receiver that ignores Orderly-Deadline, a request a Go handler
// sent before its context ended) may go on: its ids are handed over again
// no earlier than the call's start plus twice the call timeout, whatever
// the retry policy says, also when their retries are exhausted (what is
// left of an id would be due at once), so that work that overruns its
// timeout by up to 100% never overlaps the next call of its own ids
// (docs/contract.md §2.1).
func notBefore(fs []persistence.Failure, at time.Time) {
	for i := range fs {
		if fs[i].RetryAt.Before(at) {
			fs[i].RetryAt = at
		}
		fs[i].Hold = at
	}
}

// skip records jobs as not handled: they go back to the queue untouched.
func (p *processed) skip(jobs []persistence.Job) {
	for _, j := range jobs {
		p.skipped = append(p.skipped, j.ID)
	}
}
