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
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Processor runs one handler call over b and returns the ids that failed,
// each with its error and retry time; an empty result acknowledges every id.
// err is set when the call failed as a whole (failures then hold every id),
// for logs and the Observer. A Processor recovers the handler's panics and
// must return once ctx is cancelled.
type Processor func(ctx context.Context, b *persistence.Batch) (failures []persistence.Failure, err error)

// Store is what a shard actor calls: the shard owner's role of the store
// and, for a queue with a rate_limit, its token bucket. The store's calls
// come from the actor's tasks, concurrently with other shards'.
type Store interface {
	persistence.ShardStore
	// TakeTokens is persistence.ControlStore's.
	TakeTokens(ctx context.Context, queue string, want int, perSecond float64, burst int) (int, time.Duration, error)
}

// Observer receives a shard actor's events, for metrics. Calls come from the
// actor's goroutine and its tasks, concurrently for different shards; they
// must not block.
type Observer interface {
	// BatchDone reports a handler call: how many ids it held, how many
	// failed, how long it ran; err is the whole call's error, if any.
	BatchDone(ref persistence.ShardRef, ids, failed int, d time.Duration, err error)
	// LeaseLost reports that the actor lost its lease while holding it.
	LeaseLost(ref persistence.ShardRef)
}

// StuckObserver is an Observer that also hears of handler calls running
// past their deadline + StuckGrace: age is how long the call has run, or 0
// once it returned.
type StuckObserver interface {
	HandlerStuck(ref persistence.ShardRef, age time.Duration)
}

// SettleObserver is an Observer that also hears of settles sent again and
// of handled windows whose settle a lost lease left undone, so that an
// operator sees ids delivered more than once.
type SettleObserver interface {
	// SettleRetried reports an Advance that sends a window's settle again
	// after the last try failed (Redis unreachable, a replica wait that
	// fell short); the handler is not called again for the window.
	SettleRetried(ref persistence.ShardRef)
	// WindowLost reports ids handed to the handler under a lease lost
	// before their settle committed: the next owner hands them over
	// again.
	WindowLost(ref persistence.ShardRef, ids int)
}

// StuckGrace is how long past its deadline a handler call may run before it
// counts as stuck (it ignores its context).
const StuckGrace = 5 * time.Second

// Config configures one shard actor. The node fills every field; Ref,
// Store, Owner, Process, LeaseTTL and IdlePoll are required.
type Config struct {
	Ref   persistence.ShardRef
	Store Store
	// Owner is the node's name, recorded in the lease.
	Owner string
	// BatchSize is the most ids per handler call [1].
	BatchSize int
	// Prefetch is how many ids one fetch takes (at least BatchSize); they
	// are handed to the handler BatchSize at a time, one call after the
	// other (or ConcurrentCalls at once), and settled together.
	Prefetch int
	// ConcurrentCalls is how many calls of one window may run at once
	// [1]: each holds its own ids, so an id still has one call at a
	// time.
	ConcurrentCalls int
	// MaxPrefetch is the most ids a fetch takes while the shard is busy
	// (0: Prefetch, a fixed window). The window starts at Prefetch and
	// doubles, up to MaxPrefetch, after each window that came back full
	// and whose calls all ran within windowQuick; it halves after a fetch
	// that came back short and returns to Prefetch when the shard runs
	// dry, when its calls are slow or cut, and when another shard of the
	// node waits for a permit. It is also bounded by MaxPayloads, and by
	// time: the calls of a window longer than Prefetch share the deadline
	// bound of a window of Prefetch ids (AdvanceRequest.MaxCalls).
	MaxPrefetch   int
	MaxRetryCount int
	// MaxPayloads is the most payloads of one id a fetch hands over
	// (max_payloads_per_call; 0: persistence.DefaultMaxPayloadsPerCall).
	MaxPayloads int
	// CallTimeout is the longest one handler call may run
	// [DefaultCallTimeout]: the context of each call has a deadline at
	// most CallTimeout after its start, and the store keeps a bound on the
	// deadlines with the in-flight record, so that no other call for those
	// ids starts before it, on any node.
	CallTimeout time.Duration
	// Stateful makes the queue stateful (docs/contract.md §11): fetches
	// hand each id's state, and the state changes the Processor leaves on
	// each call's batch (persistence.Batch.StateWrites) are committed
	// with the settle. MaxStateBytes bounds them (0: the store's default).
	Stateful      bool
	MaxStateBytes int
	// FeedMaxLen, on a stateful queue, publishes committed state changes
	// on the queue's change feed kept to about that length (0: none).
	FeedMaxLen int
	Process    Processor
	// OnDead, if set, receives what a settlement moved to the morgue,
	// before the next Advance (which confirms the report). Its context ends
	// when the lease is dropped or the drain deadline passes; when it
	// returns after that, the actor leaves the lease to expire without
	// another Advance, so the next owner reports the same jobs again. Its
	// context carries Ref (internal/shardctx).
	OnDead   func(ctx context.Context, dead []persistence.Job)
	LeaseTTL time.Duration
	// Renewer, if set, renews the actor's lease together with the other
	// shards of the node (its LeaseTTL must be this LeaseTTL); nil: the
	// actor renews its own lease.
	Renewer *Renewer
	// IdlePoll is how often an idle actor checks for work it was not told
	// about (enqueue notices are hints).
	IdlePoll time.Duration
	// Poller, if set, polls the actor's shard with the node's other idle
	// shards, every IdlePoll, and wakes the actor when it has work: the
	// actor arms no poll timer of its own. Nil: the actor polls on its own
	// (an Advance every IdlePoll while idle).
	Poller *Poller
	// MorgueTTL is the morgue's retention; 0 trims nothing.
	MorgueTTL time.Duration
	// RetainFinished is the queue's retain_finished and MaxFinished its
	// max_finished (docs/contract.md §3.14): the settle keeps finished
	// records, and the retention trims those older than RetainFinished,
	// when the store is a persistence.FinishedStore. 0: none.
	RetainFinished time.Duration
	MaxFinished    int
	// Clock schedules every timer of the actor and dates what it writes
	// [clock.Real()].
	Clock  clock.Clock
	Logger *slog.Logger
	// Observer, if set, receives the actor's events.
	Observer Observer
	// Paused is whether the queue is paused (docs/contract.md §9) when
	// the actor starts; the node tells it of every change afterwards
	// (Pause). The pause is checked immediately before every handler
	// call, like the lease view: a paused queue starts no call, and the
	// ids of the fetched window not handled yet go back to the queue
	// untouched.
	Paused bool
	// RateLimit, if set, is the queue's rate_limit (docs/contract.md §9):
	// every handler call takes one token from the queue's bucket in the
	// store immediately before it starts (before the pause and lease
	// checks), waiting for the next token when there is none.
	RateLimit *RateLimit
}

// RateLimit is a queue's token bucket: PerSecond tokens a second, at most
// Burst at once, shared by every node (docs/contract.md §9).
type RateLimit struct {
	PerSecond float64
	Burst     int
}

func (c Config) withDefaults() Config {
	if c.Store == nil || c.Process == nil || c.LeaseTTL <= 0 || c.IdlePoll <= 0 {
		// The node builds every config from a validated orderly.Config.
		panic(fmt.Sprintf("shard: incomplete config for %s", c.Ref))
	}
	c.BatchSize = max(c.BatchSize, 1)
	c.ConcurrentCalls = max(c.ConcurrentCalls, 1)
	c.Prefetch = max(c.Prefetch, c.BatchSize)
	maxp := c.MaxPayloads
	if maxp <= 0 {
		maxp = persistence.DefaultMaxPayloadsPerCall
	}
	// A window of more ids than max_payloads_per_call would raise the
	// payloads one script call may touch (docs/storage.md §4).
	c.MaxPrefetch = max(c.Prefetch, min(c.MaxPrefetch, maxp, persistence.MaxBatchSize))
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	return c
}

// DefaultCallTimeout is the longest a handler call may run when
// Config.CallTimeout is not set.
const DefaultCallTimeout = 30 * time.Second

// Props returns the props of a shard actor.
func Props(cfg Config) *actor.Props {
	cfg = cfg.withDefaults()
	log := cfg.Logger.With("queue", cfg.Ref.Queue, "shard", cfg.Ref.Shard)
	return actor.PropsFromProducer(func() actor.Actor {
		return &Actor{cfg: cfg, log: log, inst: rand.Uint64(), view: &leaseView{paused: cfg.Paused}, call: &callInfo{}, pool: &callPool{}}
	},
		actor.WithReceiverMiddleware(supervisor.LogPanics(log)))
}

// Causes of a handler's cancellation.
var (
	errLeaseLost     = errors.New("shard lease lost")
	errDrainDeadline = errors.New("node stopping: drain deadline reached")
	errStopped       = errors.New("shard actor stopped")
	// ErrCallDeadline is the cause of a handler call's context cancelled
	// at its deadline (Config.CallTimeout). It is a
	// context.DeadlineExceeded.
	ErrCallDeadline = fmt.Errorf("handler call deadline passed: %w", context.DeadlineExceeded)
)

// Actor is a shard actor; see the package documentation for its protocol.
// Its fields are touched only by Receive.
type Actor struct {
	cfg  Config
	log  *slog.Logger
	inst uint64 // tells this incarnation's task results and timers from a previous one's

	base   context.Context // cancelled when the actor stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines of running tasks

	phase    phase
	permit   permitState
	lease    *persistence.Lease      // nil while the actor holds no lease
	renewing bool                    // a RenewShard call runs (beside the phase's call)
	renewDue bool                    // a renewal fell due while one was in flight
	view     *leaseView              // the conservative view of the lease, read before every handler call
	rtt      time.Duration           // slowest recent round trip of a lease call (decaying)
	stale    []persistence.Lease     // leases given up that a late reply showed still held: release them
	givenUp  string                  // token of the last lease put in stale after a late renewal reply
	keep     string                  // token of a lease left to expire for its unconfirmed dead report: never released (a release drops the report)
	handler  context.CancelCauseFunc // cancels the running handler (phaseRunning)
	call     *callInfo               // the running handler call, written by the handler task
	pool     *callPool               // goroutines of concurrent calls (ConcurrentCalls)
	stuck    time.Time               // start of the running call while it counts as stuck

	seq    int64              // last fetch's NextSeq
	calls  int64              // handler calls under this lease (delivery numbers)
	cur    *persistence.Batch // fetched and not settled
	sent   time.Time          // when the Advance that fetched cur was sent (call deadlines count from it)
	window int                // ids the next fetch asks for (0: Prefetch)
	asked  int                // ids the fetch of cur asked for
	settle *pendingSettle     // cur's outcome, not yet sent
	// expired are the payloads of cur that expired before its fetch
	// (expiry.go), taken out of it before any handler call; the settle
	// removes and counts them.
	expired []persistence.Expired
	req     *persistence.AdvanceRequest // an Advance to send or retry
	sends   int                         // how often req was sent
	// conflicts counts, per id, the settlements in a row in which the id
	// conflicted (conflict.go); an id is absent once one did not.
	conflicts map[string]int

	work    work
	trimDue bool
	// reshard: what a reshard asks of the shard (reshard.go), as the last
	// Advance said.
	reshard reshardMode
	// relayDue: the outbox may hold entries (after acquiring, or an
	// Advance that reported some); relayFails counts failed relays in a
	// row (backoff).
	relayDue   bool
	relayFails int
	// polling: registered with Config.Poller (idle); lookOutbox: the
	// poller woke the actor, so its next Advance reports the outbox
	// (the poll may have found entries to relay there).
	polling    bool
	lookOutbox bool
	deadline   time.Time // the drain deadline; zero while not draining

	failures int // consecutive failed store calls
	// deadCancel ends the context of the retries-exhausted hook of the
	// last Advance (lease dropped, drain deadline passed).
	deadCancel context.CancelCauseFunc
	lastErr    string
	reported   Report

	timers [numTimers]func() bool // stop functions of armed timers
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
	case *actor.Stopped:
		// shutdown did everything on Stopping.
	case Wake:
		a.onWake()
	case pollWake:
		if m.inst == a.inst {
			a.work.due, a.lookOutbox = true, true
		}
	case Drain:
		a.onDrain(c, m)
	case Pause:
		a.view.setPaused(m.Paused)
		if to := c.Sender(); to != nil {
			// Sent with this actor as its sender (Respond names none),
			// so that the node actor knows which shard took it.
			c.Request(to, PauseApplied{})
		}
	case Cancel:
		if a.call.cancel(m.ID) {
			a.log.Info("cancelled the handler call holding an id", "id", m.ID)
		}
	case PermitGranted:
		a.onGranted(c)
	case PermitWait:
		a.onWait()
	case taskResult:
		if m.inst == a.inst {
			a.onResult(c, m.v)
		}
	case timerFired:
		if m.inst == a.inst {
			a.onTimer(c, m)
		}
	default:
		a.log.Warn("shard actor ignores an unknown message", "type", fmt.Sprintf("%T", m))
	}
	if a.phase != phaseStopping {
		a.step(c)
	}
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
	case releasedStale:
		a.phase = phaseIdle
	case relayed:
		a.onRelayed(c, m)
	case drainStepped:
		a.onDrainStepped(c, m)
	case trimmed:
		a.onTrimmed(c, m)
	case taskPanic:
		a.log.Error("a shard task panicked", "panic", fmt.Sprint(m.value), "stack", m.stack)
		panic(fmt.Sprintf("shard task panicked: %v", m.value))
	default:
		a.log.Warn("shard actor ignores an unknown task result", "type", fmt.Sprintf("%T", m))
	}
}

func (a *Actor) onStarted(c actor.Context) {
	a.base, a.cancel = context.WithCancel(context.Background())
	a.report(c)
}

func (a *Actor) onWake() {
	a.work.due = true
	if a.lease == nil && a.phase == phaseIdle && !a.draining() && a.armed(timerRetry) {
		// Waiting to take the shard over: a release notice means the
		// lease is free now.
		a.disarm(timerRetry)
	}
}

// step starts what comes next when nothing is in flight; it runs after every
// message.
func (a *Actor) step(c actor.Context) {
	if a.phase != phaseIdle {
		return
	}
	if len(a.stale) > 0 {
		a.startReleaseStale(c)
		return
	}
	if a.armed(timerRetry) || a.permit == permitDeciding {
		return
	}
	switch {
	case a.lease == nil && a.draining():
		a.phase = phaseStopping
		c.Stop(c.Self())
	case a.lease == nil:
		a.startAcquire(c)
	case a.req != nil:
		a.startAdvance(c) // retry the very same request
	case a.draining() && a.settle != nil:
		a.newRequest(0)
		a.startAdvance(c)
	case a.relayDue && !a.armed(timerRelay):
		a.startRelay(c)
	case a.draining():
		a.startRelease(c)
	case a.reshard == reshardDrain && a.settle == nil:
		// A reshard drains the shard: no fetch while it does. (A drained
		// shard fetches as any other when told of work: nothing is
		// enqueued there any more, unless a later reshard gives its
		// number to a new shard.)
		a.returnPermit(c)
		if !a.relayDue {
			a.startDrainStep(c)
		}
	case a.settle != nil || a.permit == permitHeld:
		fetch := 0
		if a.permit == permitHeld {
			fetch = a.fetchSize()
		}
		a.newRequest(fetch)
		a.startAdvance(c)
	case a.trimDue:
		a.startTrim(c)
	case a.work.due && a.permit == permitNone:
		a.permit = permitAsked
		c.Send(c.Parent(), PermitRequest{Ref: a.cfg.Ref, Since: a.since()})
	}
}

// since estimates the perform_at of the oldest due job, for the scheduler.
func (a *Actor) since() time.Time {
	now := a.cfg.Clock.Now()
	if a.work.more && a.cur != nil && len(a.cur.Jobs) > 0 {
		return a.cur.Jobs[len(a.cur.Jobs)-1].PerformAt
	}
	if !a.work.next.IsZero() && a.work.next.Before(now) {
		return a.work.next
	}
	return now
}

func (a *Actor) onGranted(c actor.Context) {
	switch a.permit {
	case permitNone:
		// A grant meant for a previous instance (this one asked for
		// nothing): give it back.
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
		return
	case permitAsked, permitDeciding:
		a.permit = permitHeld
	}
	if a.draining() || a.lease == nil {
		a.returnPermit(c)
	}
}

func (a *Actor) onWait() {
	if a.permit == permitDeciding {
		a.permit = permitAsked
	}
	// Another shard of the node waits for a permit: turns stay as short
	// as a window of Prefetch ids.
	a.window = a.cfg.Prefetch
}

// task runs fn off the actor's goroutine and sends its result back.
func (a *Actor) task(c actor.Context, fn func(ctx context.Context) any) {
	self, root, inst := c.Self(), c.ActorSystem().Root, a.inst
	ctx := a.base
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() {
			// A panic in a task (a bug in the store or the processor)
			// becomes the actor's failure, so that its supervisor
			// restarts it with backoff.
			if r := recover(); r != nil {
				root.Send(self, taskResult{inst: inst, v: taskPanic{value: r, stack: string(debug.Stack())}})
			}
		}()
		root.Send(self, taskResult{inst: inst, v: fn(ctx)})
	}()
}

// storeTimeout bounds one store call.
func (a *Actor) storeTimeout() time.Duration { return max(a.cfg.LeaseTTL, 5*time.Second) }

// storeFailed records a failed store call and backs off before the retry.
// A draining actor past its deadline (or without a lease) gives up instead:
// the lease expires by itself and the next owner restores the batch.
func (a *Actor) storeFailed(c actor.Context, what string, err error) {
	a.failures++
	a.lastErr = what + ": " + err.Error()
	if a.draining() && (a.lease == nil || !a.cfg.Clock.Now().Before(a.deadline)) {
		a.log.Warn("store unreachable past the drain deadline; leaving the shard to lease expiry", "op", what, "err", err)
		a.dropLease()
		a.report(c)
		return
	}
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
	r := Report{Ref: a.cfg.Ref, Serving: a.lease != nil && a.failures == 0 && !a.draining(), Err: a.lastErr, StuckSince: a.stuck}
	if a.lease != nil {
		r.Epoch = a.lease.Epoch
	}
	if r == a.reported || c.Parent() == nil {
		return
	}
	a.reported = r
	c.Send(c.Parent(), r)
}

// shutdown runs on Stopping and Restarting: cancel what runs, wait for the
// actor's goroutines, and release a lease still held (its in-flight batch
// goes back to the queue), so that the next actor of the shard serves at
// once. A handler that ignores its cancelled context is waited for at most
// one LeaseTTL; the actor then stops without it and leaves its lease to
// expire, since the handler may still hold the batch's ids.
func (a *Actor) shutdown(c actor.Context, restarting bool) {
	a.phase = phaseStopping
	for k := range a.timers {
		a.disarm(timerKind(k))
	}
	if a.handler != nil {
		a.handler(errStopped)
	}
	if a.cancel != nil {
		a.cancel()
	}
	ok := a.waitTasks(a.cfg.LeaseTTL)
	a.pool.stop() // a call still running ends its goroutine when it returns
	if !ok {
		a.log.Error("a handler ignores its cancelled context; the shard actor stops without it and leaves its lease to expire")
	} else {
		leases := a.stale
		a.stopPolling()
		if a.lease != nil {
			a.unregister()
			leases = append(leases, *a.lease)
		}
		for _, l := range leases {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := a.cfg.Store.ReleaseShard(ctx, l); err != nil {
				a.log.Warn("stopping shard actor could not release its lease; it expires by itself", "err", err, "restarting", restarting)
			} else {
				a.log.Info("released shard", "restarting", restarting)
			}
			cancel()
		}
	}
	a.stale = nil
	a.view.set(time.Time{})
	if a.permit != permitNone {
		// The actor is gone: the node forgets its permit or its request.
		c.Send(c.Parent(), PermitReturn{Ref: a.cfg.Ref})
		a.permit = permitNone
	}
	a.lease = nil
	if c.Parent() != nil {
		c.Send(c.Parent(), Report{Ref: a.cfg.Ref})
	}
}

// waitTasks waits up to d (on the actor's clock) for every task to return.
func (a *Actor) waitTasks(d time.Duration) bool {
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }() // ends with the last task, even one that outlives the wait
	timeout, stop := clock.After(a.cfg.Clock, d)
	defer stop()
	select {
	case <-done:
		return true
	case <-timeout:
		return false
	}
}
