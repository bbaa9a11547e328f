package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/persistence"
)

// Defaults of Config.
const (
	DefaultLeaseTTL  = 3 * time.Second
	DefaultIdlePoll  = 5 * time.Second
	DefaultMorgueTTL = 180 * 24 * time.Hour
	// trimEvery is how often the morgue retention runs per shard.
	trimEvery = time.Hour
	// maxErrorBytes bounds an error message stored with a job.
	maxErrorBytes = 4096
)

// Processor runs one batch. It returns the ids that failed with their error
// messages (partial failure), or an error that fails every id of the batch.
// It must return when ctx is cancelled.
type Processor func(ctx context.Context, b *persistence.Batch) (failed map[string]string, err error)

// Observer receives a shard actor's events, for metrics. Calls come from the
// actor's goroutine and its tasks, concurrently for different shards; they
// must not block.
type Observer interface {
	// BatchDone reports a handler call: how many ids it held, how many
	// failed, how long it ran; err is the whole batch's error, if any.
	BatchDone(ref persistence.ShardRef, ids, failed int, d time.Duration, err error)
	// LeaseLost reports that the actor lost its lease while holding it.
	LeaseLost(ref persistence.ShardRef)
}

// Config configures one shard actor. Zero durations mean their defaults.
type Config struct {
	Ref   persistence.ShardRef
	Store persistence.Store
	// Owner is the node's name, recorded in the lease.
	Owner string
	// BatchSize is the most ids per handler call.
	BatchSize int
	// Prefetch is how many ids one fetch takes (at least BatchSize); they
	// are handed to the handler BatchSize at a time, one call after the
	// other, and settled together.
	Prefetch      int
	MaxRetryCount int
	// RetryIn returns the wait before the next attempt for a retry count.
	RetryIn func(retryCount int) time.Duration
	// Timeout bounds one handler call; 0 means none.
	Timeout time.Duration
	Process Processor
	// OnDead, if set, receives what a settlement moved to the morgue.
	OnDead    func(ctx context.Context, dead []persistence.Job)
	LeaseTTL  time.Duration
	IdlePoll  time.Duration
	MorgueTTL time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
	// Observer, if set, receives the actor's events.
	Observer Observer
}

func (c Config) withDefaults() Config {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.IdlePoll <= 0 {
		c.IdlePoll = DefaultIdlePoll
	}
	if c.MorgueTTL == 0 {
		c.MorgueTTL = DefaultMorgueTTL
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1
	}
	c.Prefetch = max(c.Prefetch, c.BatchSize)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.RetryIn == nil {
		c.RetryIn = func(int) time.Duration { return 15 * time.Second }
	}
	return c
}

// Props returns the props of a shard actor.
func Props(cfg Config) *actor.Props {
	cfg = cfg.withDefaults()
	log := cfg.Logger.With("queue", cfg.Ref.Queue, "shard", cfg.Ref.Shard)
	return actor.PropsFromProducer(func() actor.Actor { return &Actor{cfg: cfg, log: log, inst: rand.Uint64()} },
		actor.WithReceiverMiddleware(supervisor.LogPanics(log)))
}

// Causes of a handler's cancellation.
var (
	errLeaseLost     = errors.New("shard lease lost")
	errDrainDeadline = errors.New("node stopping: drain deadline reached")
	errStopped       = errors.New("shard actor stopped")
	errTimeout       = errors.New("handler timeout")
)

// pendingSettle is the outcome of the current batch, to be sent to the store.
type pendingSettle struct {
	failures []persistence.Failure
	skipped  []string
}

// Actor is a shard actor; see the package documentation for its protocol.
type Actor struct {
	cfg  Config
	log  *slog.Logger
	inst uint64 // tells this incarnation's task results and timers from a previous one's

	base   context.Context // cancelled when the actor stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines of running tasks

	lease    *persistence.Lease
	seq      int64                       // last fetch's NextSeq
	calls    int64                       // handler calls under this lease (delivery numbers)
	cur      *persistence.Batch          // fetched and not settled
	settle   *pendingSettle              // cur's outcome, not yet sent
	req      *persistence.AdvanceRequest // an Advance to send or retry
	ioBusy   bool                        // a store call runs
	handler  context.CancelCauseFunc     // non-nil while a handler runs
	renewing bool
	permit   bool // holds a concurrency permit
	asked    bool // sent PermitRequest, no grant yet
	deciding bool // sent PermitReturn{Again}, no answer yet
	dirty    bool // there may be due work
	more     bool // the last fetch was full
	nextDue  time.Time
	draining bool
	deadline time.Time
	stopping bool
	trimDue  bool
	failures int // consecutive failed store calls
	lastErr  string
	reported Report

	timers [numTimers]*time.Timer
	gens   [numTimers]uint64
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.onStarted(c)
	case *actor.Stopping:
		a.shutdown(c, false)
	case *actor.Restarting:
		a.shutdown(c, true)
	case Wake:
		a.dirty = true
		if a.lease == nil && !a.draining && !a.ioBusy && a.timers[timerRetry] != nil {
			// Waiting to take the shard over: a release notice means the
			// lease is free now.
			a.disarm(timerRetry)
		}
	case Drain:
		a.onDrain(c, m)
	case StatusRequest:
		c.Respond(a.status())
	case PermitGranted:
		a.onGranted(c)
	case PermitWait:
		a.deciding, a.permit, a.asked = false, false, true
	case taskResult:
		if m.inst == a.inst {
			a.onResult(c, m.v)
		}
	case timerFired:
		if m.inst == a.inst {
			a.onTimer(c, m)
		}
	}
	if !a.stopping {
		a.step(c)
	}
}

// taskResult carries a task's result back to the incarnation that ran it.
type taskResult struct {
	inst uint64
	v    any
}

func (a *Actor) onResult(c actor.Context, v any) {
	switch m := v.(type) {
	case acquired:
		a.onAcquired(c, m)
	case advanced:
		a.onAdvanced(c, m)
	case processed:
		a.onProcessed(c, m)
	case renewed:
		a.onRenewed(c, m)
	case released:
		a.onReleased(c, m)
	case trimmed:
		a.onTrimmed(c, m)
	case taskPanic:
		a.log.Error("a shard task panicked", "panic", fmt.Sprint(m.value), "stack", m.stack)
		panic(fmt.Sprintf("shard task panicked: %v", m.value))
	}
}

// taskPanic reports a panic of a task.
type taskPanic struct {
	value any
	stack string
}

func (a *Actor) onStarted(c actor.Context) {
	a.base, a.cancel = context.WithCancel(context.Background())
	a.report(c)
}

// step starts the next store call when nothing runs; it is called after
// every message.
func (a *Actor) step(c actor.Context) {
	if a.ioBusy || a.handler != nil || a.deciding || a.timers[timerRetry] != nil {
		return
	}
	switch {
	case a.lease == nil && a.draining:
		c.Stop(c.Self())
	case a.lease == nil:
		a.startAcquire(c)
	case a.req != nil:
		a.startAdvance(c)
	case a.draining && a.settle != nil:
		a.newRequest(0)
		a.startAdvance(c)
	case a.draining:
		a.startRelease(c)
	case a.settle != nil && a.permit:
		a.newRequest(a.cfg.Prefetch)
		a.startAdvance(c)
	case a.settle != nil:
		a.newRequest(0)
		a.startAdvance(c)
	case a.permit:
		a.newRequest(a.cfg.Prefetch)
		a.startAdvance(c)
	case a.trimDue:
		a.startTrim(c)
	case a.dirty && !a.asked:
		a.asked = true
		c.Send(c.Parent(), PermitRequest{Ref: a.cfg.Ref, Since: a.since()})
	}
}

// since estimates the perform_at of the oldest due job, for the scheduler.
func (a *Actor) since() time.Time {
	now := a.cfg.Now()
	if a.more && a.cur != nil && len(a.cur.Jobs) > 0 {
		return a.cur.Jobs[len(a.cur.Jobs)-1].PerformAt
	}
	if !a.nextDue.IsZero() && a.nextDue.Before(now) {
		return a.nextDue
	}
	return now
}

func (a *Actor) newRequest(fetch int) {
	a.seq++
	req := persistence.AdvanceRequest{Fetch: fetch, NextSeq: a.seq, MaxRetryCount: a.cfg.MaxRetryCount}
	if a.settle != nil && a.cur != nil {
		req.Settle = a.cur.Seq
		req.Failures = a.settle.failures
		req.Skipped = a.settle.skipped
	}
	if fetch > 0 {
		a.dirty = false
	}
	a.req = &req
}

// task runs fn off the actor's goroutine and sends its result back.
func (a *Actor) task(c actor.Context, fn func(ctx context.Context) any) {
	self, root, inst := c.Self(), c.ActorSystem().Root, a.inst
	ctx := a.base
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() {
			// A panic in a task (a store bug) becomes the actor's failure,
			// so that its supervisor restarts it with backoff.
			if r := recover(); r != nil {
				root.Send(self, taskResult{inst: inst, v: taskPanic{value: r, stack: string(debug.Stack())}})
			}
		}()
		root.Send(self, taskResult{inst: inst, v: fn(ctx)})
	}()
}

func (a *Actor) storeTimeout() time.Duration { return max(a.cfg.LeaseTTL, 5*time.Second) }

func (a *Actor) startAcquire(c actor.Context) {
	a.ioBusy = true
	cfg := a.cfg
	a.task(c, func(ctx context.Context) any {
		started := time.Now()
		ctx, cancel := context.WithTimeout(ctx, a.storeTimeout())
		defer cancel()
		l, n, err := cfg.Store.AcquireShard(ctx, cfg.Ref, cfg.Owner, cfg.LeaseTTL)
		return acquired{lease: l, restored: n, err: err, started: started}
	})
}

func (a *Actor) onAcquired(c actor.Context, m acquired) {
	a.ioBusy = false
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
	a.arm(c, timerGuard, a.guardAfter(time.Since(m.started)))
	a.dirty, a.trimDue = true, a.cfg.MorgueTTL > 0
	a.report(c)
}

// guardAfter returns when the lease guard fires, for a renewal that started
// ago before now.
func (a *Actor) guardAfter(ago time.Duration) time.Duration {
	ttl := a.cfg.LeaseTTL
	return max(ttl-ttl/6-ago, 0)
}

func (a *Actor) startAdvance(c actor.Context) {
	a.ioBusy = true
	req := *a.req
	lease := *a.lease
	cfg := a.cfg
	log := a.log
	a.task(c, func(ctx context.Context) any {
		ctx, cancel := context.WithTimeout(ctx, a.storeTimeout())
		defer cancel()
		res, err := cfg.Store.Advance(ctx, lease, req)
		if err == nil && len(res.Dead) > 0 {
			log.Warn("retries exhausted: payloads moved to the morgue", "ids", len(res.Dead))
			if cfg.OnDead != nil {
				callOnDead(ctx, cfg.OnDead, res.Dead, log)
			}
		}
		return advanced{req: req, res: res, err: err}
	})
}

func callOnDead(ctx context.Context, fn func(context.Context, []persistence.Job), dead []persistence.Job, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("retries_exhausted hook panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn(ctx, dead)
}

func (a *Actor) onAdvanced(c actor.Context, m advanced) {
	a.ioBusy = false
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
	a.req = nil
	a.storeOK(c)
	if m.req.Settle != 0 {
		a.settle, a.cur = nil, nil
	}
	if m.res.Restored > 0 {
		a.log.Warn("an in-flight batch this owner no longer tracked went back to the queue", "ids", m.res.Restored)
	}
	a.more, a.nextDue = m.res.More, m.res.NextDue
	if b := m.res.Batch; b != nil {
		a.cur = b
		if a.draining {
			// Not started: Release restores it for the next owner.
			if a.permit {
				a.permit = false
				c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
			}
			return
		}
		a.startHandler(c, b)
		return
	}
	a.cur = nil
	if a.permit {
		a.permit = false
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
	}
	if !a.draining {
		if !a.nextDue.IsZero() {
			a.arm(c, timerDue, max(a.nextDue.Sub(a.cfg.Now()), 0)+time.Millisecond)
		}
		a.arm(c, timerPoll, a.cfg.IdlePoll)
	}
}

// startHandler runs the fetched batch through the handler, BatchSize ids per
// call, one call after the other. A drain deadline stops it between (or
// cuts) calls: the ids not handled are skipped, so that they go back to the
// queue untouched.
func (a *Actor) startHandler(c actor.Context, b *persistence.Batch) {
	hctx, cancel := context.WithCancelCause(a.base)
	a.handler = cancel
	cfg := a.cfg
	log := a.log
	first := a.calls
	size := max(cfg.BatchSize, 1)
	a.calls += int64((len(b.Jobs) + size - 1) / size)
	a.task(c, func(context.Context) any {
		out := processed{seq: b.Seq}
		start := time.Now()
		for i, k := 0, first; i < len(b.Jobs); i, k = i+size, k+1 {
			jobs := b.Jobs[i:min(i+size, len(b.Jobs))]
			if hctx.Err() != nil {
				for _, j := range b.Jobs[i:] {
					out.skipped = append(out.skipped, j.ID)
				}
				break
			}
			call := &persistence.Batch{ShardRef: b.ShardRef, Seq: k + 1, Token: b.Token, FetchedAt: b.FetchedAt, Jobs: jobs}
			ctx, stop := hctx, context.CancelFunc(func() {})
			if cfg.Timeout > 0 {
				ctx, stop = context.WithTimeoutCause(hctx, cfg.Timeout, errTimeout)
			}
			callStart := time.Now()
			failed, err := safeProcess(ctx, cfg.Process, call, log.With("delivery", Delivery(call)))
			if err != nil && errors.Is(context.Cause(ctx), errTimeout) {
				err = fmt.Errorf("timed out after %s: %w", cfg.Timeout, err)
			}
			stop()
			if err != nil && errors.Is(context.Cause(hctx), errDrainDeadline) {
				// Cut by the drain deadline: not handled, not failed.
				for _, j := range b.Jobs[i:] {
					out.skipped = append(out.skipped, j.ID)
				}
				out.cut = true
				break
			}
			fs := failuresOf(cfg, call, failed, err, log)
			if o := cfg.Observer; o != nil {
				o.BatchDone(b.ShardRef, len(jobs), len(fs), time.Since(callStart), err)
			}
			if err != nil {
				out.err = err
			}
			out.failures = append(out.failures, fs...)
		}
		out.dur = time.Since(start)
		out.cut = out.cut || hctx.Err() != nil
		cancel(nil)
		return out
	})
}

// Delivery names a delivery attempt of a batch: "<queue>/<shard>/<epoch>/<seq>".
func Delivery(b *persistence.Batch) string {
	epoch := b.Token
	for i := 0; i < len(epoch); i++ {
		if epoch[i] == '/' {
			epoch = epoch[:i]
			break
		}
	}
	return fmt.Sprintf("%s/%d/%s/%d", b.Queue, b.Shard, epoch, b.Seq)
}

// safeProcess runs the processor, turning a panic into a failed batch.
func safeProcess(ctx context.Context, p Processor, b *persistence.Batch, log *slog.Logger) (failed map[string]string, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("handler panicked; the batch fails", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			failed, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return p(ctx, b)
}

// failuresOf turns a handler's outcome into the store's failures, with the
// retry time of each failed id.
func failuresOf(cfg Config, b *persistence.Batch, failed map[string]string, err error, log *slog.Logger) []persistence.Failure {
	now := cfg.Now()
	mk := func(j persistence.Job, msg string) persistence.Failure {
		return persistence.Failure{ID: j.ID, Error: truncate(msg), RetryAt: now.Add(cfg.RetryIn(j.RetryCount + 1))}
	}
	var out []persistence.Failure
	if err != nil {
		msg := err.Error()
		if msg == "" {
			msg = "failed"
		}
		for _, j := range b.Jobs {
			out = append(out, mk(j, msg))
		}
		return out
	}
	seen := 0
	for _, j := range b.Jobs {
		if msg, ok := failed[j.ID]; ok {
			seen++
			if msg == "" {
				msg = "failed"
			}
			out = append(out, mk(j, msg))
		}
	}
	if seen < len(failed) {
		for id := range failed {
			if !inBatch(b, id) {
				log.Warn("handler failed an id that is not in the batch; ignored", "job_id", id)
			}
		}
	}
	return out
}

func inBatch(b *persistence.Batch, id string) bool {
	for _, j := range b.Jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

func truncate(s string) string {
	if len(s) <= maxErrorBytes {
		return s
	}
	return s[:maxErrorBytes]
}

func (a *Actor) onProcessed(c actor.Context, m processed) {
	a.handler = nil
	a.disarm(timerStuck)
	if a.lease == nil || a.cur == nil || a.cur.Seq != m.seq {
		return // lease lost meanwhile: the next owner restores the batch
	}
	switch {
	case len(m.skipped) > 0:
		a.log.Warn("batch cut by shutdown; the ids not handled go back to the queue", "ids", len(a.cur.Jobs), "skipped", len(m.skipped))
	case m.err != nil:
		a.log.Warn("batch failed", "ids", len(a.cur.Jobs), "failed", len(m.failures), "err", m.err, "duration", m.dur)
	case len(m.failures) > 0:
		a.log.Info("batch partly failed", "ids", len(a.cur.Jobs), "failed", len(m.failures), "duration", m.dur)
	}
	a.settle = &pendingSettle{failures: m.failures, skipped: m.skipped}
	if a.permit {
		if a.draining {
			a.permit = false
			c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
		} else {
			a.deciding = true
			c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref, Again: true, Since: a.since()})
		}
	}
}

func (a *Actor) onGranted(c actor.Context) {
	if a.deciding {
		a.deciding = false // keep the permit
	} else {
		a.asked, a.permit = false, true
	}
	if a.draining || a.lease == nil {
		a.permit = false
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
	}
}

func (a *Actor) startRenew(c actor.Context) {
	a.renewing = true
	lease := *a.lease
	cfg := a.cfg
	a.task(c, func(ctx context.Context) any {
		started := time.Now()
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
		a.arm(c, timerGuard, a.guardAfter(time.Since(m.started)))
		if a.failures > 0 && !a.ioBusy {
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

// leaseLost forgets the lease and cancels the handler at once.
func (a *Actor) leaseLost(c actor.Context, why string) {
	a.log.Warn("shard lease lost; handler cancelled, batch left to the next owner", "reason", why)
	if o := a.cfg.Observer; o != nil {
		o.LeaseLost(a.cfg.Ref)
	}
	a.lease, a.req, a.settle, a.cur = nil, nil, nil, nil
	a.disarm(timerRenew)
	a.disarm(timerGuard)
	if a.handler != nil {
		a.handler(errLeaseLost)
		a.arm(c, timerStuck, a.cfg.LeaseTTL)
	}
	if a.permit && !a.deciding {
		a.permit = false
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
	}
	a.lastErr = "lease lost: " + why
	a.report(c)
	a.arm(c, timerRetry, jitter(a.cfg.LeaseTTL/10))
}

func (a *Actor) startRelease(c actor.Context) {
	a.ioBusy = true
	lease := *a.lease
	cfg := a.cfg
	a.task(c, func(ctx context.Context) any {
		ctx, cancel := context.WithTimeout(ctx, a.storeTimeout())
		defer cancel()
		return released{err: cfg.Store.ReleaseShard(ctx, lease)}
	})
}

func (a *Actor) onReleased(c actor.Context, m released) {
	a.ioBusy = false
	if m.err != nil && !errors.Is(m.err, persistence.ErrLeaseLost) && a.cfg.Now().Before(a.deadline) {
		a.storeFailed(c, "release the shard lease", m.err)
		return
	}
	if m.err != nil {
		a.log.Warn("could not release the shard lease; it expires by itself", "err", m.err)
	} else {
		a.log.Info("released shard")
	}
	a.lease = nil
	a.disarm(timerRenew)
	a.disarm(timerGuard)
	a.report(c)
}

func (a *Actor) startTrim(c actor.Context) {
	a.ioBusy, a.trimDue = true, false
	cfg := a.cfg
	a.task(c, func(ctx context.Context) any {
		before := cfg.Now().Add(-cfg.MorgueTTL)
		total := 0
		for range 20 { // at most 10,000 entries per run
			ctx, cancel := context.WithTimeout(ctx, a.storeTimeout())
			n, err := cfg.Store.TrimMorgue(ctx, cfg.Ref, before, 500)
			cancel()
			total += n
			if err != nil || n < 500 {
				return trimmed{n: total, err: err}
			}
		}
		return trimmed{n: total}
	})
}

func (a *Actor) onTrimmed(c actor.Context, m trimmed) {
	a.ioBusy = false
	if m.err != nil {
		a.log.Warn("morgue retention failed", "err", m.err)
	} else if m.n > 0 {
		a.log.Info("morgue retention deleted old entries", "entries", m.n)
	}
	a.arm(c, timerTrim, trimEvery)
}

func (a *Actor) onDrain(c actor.Context, m Drain) {
	if a.draining {
		return
	}
	a.draining, a.deadline, a.dirty = true, m.Deadline, false
	a.disarm(timerDue)
	a.disarm(timerPoll)
	a.disarm(timerTrim)
	a.trimDue = false
	a.arm(c, timerDeadline, max(time.Until(m.Deadline), 0))
	if a.permit && !a.deciding && a.handler == nil && !a.ioBusy {
		a.permit = false
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
	}
}

func (a *Actor) onTimer(c actor.Context, m timerFired) {
	if m.gen != a.gens[m.kind] || a.timers[m.kind] == nil {
		return // stale
	}
	a.timers[m.kind] = nil
	switch m.kind {
	case timerDue, timerPoll:
		a.dirty = true
	case timerRenew:
		if a.lease != nil && !a.renewing {
			a.startRenew(c)
		}
	case timerGuard:
		if a.lease != nil {
			a.leaseLost(c, "could not renew the lease before it could expire")
		}
	case timerRetry:
	case timerTrim:
		a.trimDue = a.lease != nil
	case timerDeadline:
		if a.handler != nil {
			a.handler(errDrainDeadline)
			a.arm(c, timerStuck, a.cfg.LeaseTTL)
		}
		if a.ioBusy || a.lease == nil {
			return
		}
		// Out of time and not settled yet (the store may be down): give up
		// settling; the lease expires by itself and the next owner restores.
		if a.failures > 0 {
			a.log.Warn("drain deadline passed with the store unreachable; leaving the shard to lease expiry")
			a.lease = nil
		}
	case timerStuck:
		if a.handler != nil {
			a.log.Error("handler ignores its cancelled context; the shard waits for it (another node may already serve these ids)")
			a.arm(c, timerStuck, a.cfg.LeaseTTL)
		}
	}
}

// storeFailed records a failed store call and backs off before the retry.
func (a *Actor) storeFailed(c actor.Context, what string, err error) {
	a.failures++
	a.lastErr = what + ": " + err.Error()
	if a.failures == 1 || a.failures%20 == 0 {
		a.log.Warn("store call failed; retrying with backoff", "op", what, "err", err, "attempt", a.failures)
	}
	d := min(50*time.Millisecond<<min(a.failures, 5), time.Second)
	a.arm(c, timerRetry, jitter(d))
	a.report(c)
}

func (a *Actor) storeOK(c actor.Context) {
	if a.failures > 0 {
		a.log.Info("store reachable again", "after_failures", a.failures)
	}
	a.failures, a.lastErr = 0, ""
	a.report(c)
}

// report tells the node when the actor's serving state changes.
func (a *Actor) report(c actor.Context) {
	r := Report{Ref: a.cfg.Ref, Serving: a.lease != nil && a.failures == 0 && !a.draining, Err: a.lastErr}
	if a.lease != nil {
		r.Epoch = a.lease.Epoch
	}
	if r == a.reported || c.Parent() == nil {
		return
	}
	a.reported = r
	c.Send(c.Parent(), r)
}

func (a *Actor) status() Status {
	s := Status{Ref: a.cfg.Ref, Err: a.lastErr}
	switch {
	case a.draining:
		s.State = "draining"
	case a.lease == nil:
		s.State = "acquiring"
	case a.handler != nil:
		s.State = "processing"
	case a.ioBusy:
		s.State = "fetching"
	default:
		s.State = "idle"
	}
	if a.lease != nil {
		s.Epoch = a.lease.Epoch
	}
	if a.cur != nil {
		s.InFlight = len(a.cur.Jobs)
	}
	return s
}

// shutdown runs on Stopping and Restarting: cancel what runs and wait for
// every goroutine the actor started. A restarting instance also releases
// its lease so that the next instance can serve at once.
func (a *Actor) shutdown(c actor.Context, restarting bool) {
	a.stopping = true
	for k := range a.timers {
		a.disarm(timerKind(k))
	}
	if a.handler != nil {
		a.handler(errStopped)
	}
	if a.cancel != nil {
		a.cancel()
	}
	a.wg.Wait()
	if restarting && a.lease != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := a.cfg.Store.ReleaseShard(ctx, *a.lease); err != nil {
			a.log.Warn("restarting shard actor could not release its lease", "err", err)
		}
		cancel()
	}
	if a.permit || a.deciding || a.asked {
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
	}
	a.lease = nil
	if c.Parent() != nil {
		c.Send(c.Parent(), Report{Ref: a.cfg.Ref})
	}
}

func (a *Actor) arm(c actor.Context, k timerKind, d time.Duration) {
	a.disarm(k)
	a.gens[k]++
	gen := a.gens[k]
	self, root := c.Self(), c.ActorSystem().Root
	inst := a.inst
	a.timers[k] = time.AfterFunc(d, func() { root.Send(self, timerFired{inst: inst, kind: k, gen: gen}) })
}

func (a *Actor) disarm(k timerKind) {
	if t := a.timers[k]; t != nil {
		t.Stop()
		a.timers[k] = nil
	}
}

// jitter returns d plus up to 50% more, so that shards do not move in step.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/2+1)
}
