package pull

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/deferred"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// DefaultLease is a lease's deadline after its pull when Options.Lease is
// zero.
const DefaultLease = 30 * time.Second

// Reasons of a LeaseError.
const (
	ReasonDeadline = "deadline passed"
	ReasonLost     = "lease lost"
	ReasonUnknown  = "unknown lease"
)

// Errors of the Broker.
var (
	// ErrStopped is the error of a pull after Stop.
	ErrStopped = errors.New("pull: the node is stopping")
	// ErrUnknownQueue is the error of a pull for a queue that is not a
	// pull queue of this node.
	ErrUnknownQueue = errors.New("pull: not a pull queue of this node")
	// ErrMaxIDs is the error of a pull whose max_ids is below the queue's
	// batch size: a call is never split.
	ErrMaxIDs = errors.New("pull: max_ids is below the queue's batch_size")
	// errLeaseExpired is the error of a call whose lease passed its
	// deadline without an answer.
	errLeaseExpired = errors.New("pull: no answer by the lease's deadline")
	// errNotPulled is logged when a call goes back unpulled.
	errNotPulled = errors.New("pull: no worker pulled the batch")
)

// LeaseError is the error of an answer or extension for a lease that is no
// longer valid: nothing of the answer is committed.
type LeaseError struct {
	// Reason is ReasonDeadline, ReasonLost or ReasonUnknown.
	Reason string
}

// Error says that the lease is no longer valid, and why.
func (e *LeaseError) Error() string { return "pull: the lease is no longer valid: " + e.Reason }

// Options are a pull queue's settings.
type Options struct {
	// BatchSize is the queue's batch size: a pull must accept at least
	// that many ids. [1]
	BatchSize int
	// Lease is a lease's deadline after its pull, never past its call's
	// deadline; keep it at most half the call timeout, so that a call
	// pulled just before it gives its ids back still gets a full lease.
	// [DefaultLease]
	Lease time.Duration
}

// Config configures a Broker.
type Config struct {
	// Logger receives the broker's logs. [slog.Default()]
	Logger *slog.Logger
}

// Broker hands the batches of a node's pull queues to pull workers. Its
// methods are safe for concurrent use.
type Broker struct {
	log *slog.Logger
	// now is time.Now: leases count in real time, as the call contexts'
	// deadlines (which bound them) and the timers do.
	now  func() time.Time
	stop chan struct{} // closed by Stop

	mu      sync.Mutex // guards what follows
	stopped bool
	queues  map[string]*queue
	leases  map[string]*lease
	ended   map[string]string // ended lease id -> reason, kept for endedTTL
	endedQ  []endedLease      // ended's ids, oldest first
	watches map[context.Context]*watch
}

// watch is the held calls of one deadline context: when it ends, they end.
type watch struct {
	calls []*call // every call registered; those not over are live
	live  int
	stop  func() bool // the context.AfterFunc's
}

// endedTTL is how long an ended lease's reason is remembered.
const endedTTL = 10 * time.Minute

type endedLease struct {
	id string
	at time.Time
}

// queue is a pull queue's waiting calls and pulls.
type queue struct {
	name    string
	opts    Options
	pending []*call   // calls no pull took yet, oldest first
	waiters []*waiter // pulls waiting for a call, oldest first
	held    int       // leases held
	// sweep gives back the pending calls no pull took by their giveBack
	// (one timer for the queue, armed for the earliest); sweepAt is
	// when it fires, zero when it is not armed.
	sweep   *time.Timer
	sweepAt time.Time
}

// waiter is a pull waiting for a call.
type waiter struct{ got chan *lease } // cap 1

// call is one handler call waiting for, or held by, a pull. Its handler
// goroutine sleeps on wake; what woke it is in the fields Broker.mu
// guards.
type call struct {
	ctx      context.Context // the handler call's
	batch    *orderly.Batch
	deadline time.Time     // the call's context deadline
	giveBack time.Time     // unpulled by then, the call gives its ids back
	wake     chan struct{} // cap 1: a field below changed
	lease    *lease        // under Broker.mu: set when pulled
	back     bool          // under Broker.mu: given back unpulled
	// taken is set, under Broker.mu, when an answer took the call (its
	// context had not ended): the answer's part is applied to batch by
	// the answer, which then sets err, what the call returns, and then
	// applied, which the call reads without Broker.mu (err is written
	// before applied, and read after it); from taken on, the call waits
	// for applied whatever its context does.
	taken   bool
	applied atomic.Bool
	err     error
	gone    string // under Broker.mu: why the call ended before an answer
	// d is set for a held call (internal/deferred): no goroutine waits
	// for it; whatever ends it ends d (after Broker.mu is released), and
	// ctx is the window's deadline context, watched once for all its
	// calls (watch).
	d    *deferred.Call
	q    *queue
	w    *watch
	over bool // under Broker.mu: a held call's end was decided
}

// signal wakes c's handler goroutine.
func (c *call) signal() {
	select {
	case c.wake <- struct{}{}:
	default: // already woken: it reads every field when it runs
	}
}

// lease is a pull's hold on one or more calls of a queue.
type lease struct {
	id       string
	q        *queue
	calls    []*call
	deadline time.Time   // guarded by Broker.mu
	answered bool        // guarded by Broker.mu
	live     int         // guarded by Broker.mu: calls not ended
	timer    *time.Timer // ends the lease at its deadline (expire)
}

// Lease is what a pull returns.
type Lease struct {
	// ID names the lease in answers and extensions.
	ID string
	// Deadline is when the lease ends without an answer.
	Deadline time.Time
	// Jobs are the batch, in the webhook request's shape.
	Jobs []wire.Job
}

// New returns a Broker.
func New(cfg *Config) *Broker {
	b := &Broker{log: slog.Default(), now: time.Now, stop: make(chan struct{}),
		queues: map[string]*queue{}, leases: map[string]*lease{}, ended: map[string]string{},
		watches: map[context.Context]*watch{}}
	if cfg != nil && cfg.Logger != nil {
		b.log = cfg.Logger
	}
	return b
}

// Handler registers a pull queue and returns its handler: the
// orderly.Worker's Handler of the queue. Calling it again for a queue
// returns a handler that shares the first one's calls and pulls (two nodes
// of one process may share a broker); the first options stay.
func (b *Broker) Handler(queueName string, opts Options) orderly.HandlerFunc {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1
	}
	b.mu.Lock()
	q := b.queues[queueName]
	if q == nil {
		q = &queue{name: queueName, opts: opts}
		b.queues[queueName] = q
	}
	b.mu.Unlock()
	return func(ctx context.Context, batch *orderly.Batch) error { return b.handle(ctx, q, batch) }
}

// handle is one handler call of q.
func (b *Broker) handle(ctx context.Context, q *queue, batch *orderly.Batch) error {
	if d := deferred.From(ctx); d != nil {
		return b.hold(d, q, batch)
	}
	now := b.now()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(2 * b.leaseOf(q))
	}
	// Unpulled, the call gives its ids back one lease before its
	// deadline, so that a pull always gets a full lease.
	left := deadline.Sub(now)
	c := &call{ctx: ctx, batch: batch, deadline: deadline, giveBack: now.Add(left - min(b.leaseOf(q), left/2)), wake: make(chan struct{}, 1)}
	if !b.offer(q, c) {
		return orderly.Snooze(0)
	}
	// The end of ctx wakes the call too: every wait below is on wake and
	// on ctx.Done (a call's context is its own, its Done channel made for
	// this wait; an AfterFunc would register one more child per call).
	// The call waits first: offer queued it or handed it to a pull, and
	// whatever changes for it next (an answer applied, its lease's
	// deadline, a sweep, Stop) signals wake. An answer applied is seen
	// without Broker.mu, which every call of every pull queue shares.
	done := ctx.Done()
	for {
		select {
		case <-c.wake:
		case <-done:
			done = nil // ended: the checks below see it from now on
		}
		if c.applied.Load() {
			return c.err
		}
		// Signals coalesce (wake holds one): every field is read after
		// each wait.
		b.mu.Lock()
		if c.lease != nil {
			end, err := b.heldLocked(ctx, c)
			b.mu.Unlock()
			if end {
				return err
			}
			continue
		}
		if !c.back && !b.stopped && ctx.Err() == nil {
			b.mu.Unlock()
			continue
		}
		b.unofferLocked(q, c)
		b.mu.Unlock()
		if ctx.Err() != nil {
			return fmt.Errorf("pull: %w", context.Cause(ctx))
		}
		b.log.Debug("pull: batch given back", "queue", q.name, "ids", len(batch.Jobs), "err", errNotPulled)
		return orderly.Snooze(0)
	}
}

// leaseOf is q's lease duration.
func (b *Broker) leaseOf(q *queue) time.Duration {
	if q.opts.Lease > 0 {
		return q.opts.Lease
	}
	return DefaultLease
}

// heldLocked checks a pulled call woken by its signal or the end of its
// context: end reports that the call returns err; otherwise it waits on.
func (b *Broker) heldLocked(ctx context.Context, c *call) (end bool, err error) {
	switch {
	case c.applied.Load():
		return true, c.err
	case c.taken:
		// The answer applies its part: the call waits for it.
		return false, nil
	case c.gone != "":
		return true, fmt.Errorf("lease %s: %w", c.lease.id, errLeaseExpired)
	case ctx.Err() != nil:
		b.endLockedCall(c, reasonOf(ctx))
		return true, fmt.Errorf("pull: %w", context.Cause(ctx))
	}
	return false, nil
}

// reasonOf is why a call's context ended.
func reasonOf(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return ReasonDeadline
	}
	return ReasonLost
}

// endLockedCall ends c's part of its lease for reason, its context having
// ended before an answer took it; the lease ends once none of its calls is
// left.
func (b *Broker) endLockedCall(c *call, reason string) {
	l := c.lease
	if c.gone == "" {
		c.gone = reason
		l.live--
	}
	if l.live == 0 || l.answered {
		b.endLocked(l, reason)
	}
}

// expire runs at l's deadline: unless an answer came first or the lease
// was extended meanwhile (it waits for the new deadline then), each call
// of l still live ends with ReasonDeadline, and l with them.
func (b *Broker) expire(l *lease) {
	b.mu.Lock()
	if l.answered {
		b.mu.Unlock()
		return
	}
	if wait := l.deadline.Sub(b.now()); wait > 0 {
		l.timer.Reset(wait)
		b.mu.Unlock()
		return
	}
	var ends []*call
	for _, c := range l.calls {
		if c.gone == "" {
			c.gone = ReasonDeadline
			l.live--
			c.signal()
			ends = b.heldOverLocked(ends, c)
		}
	}
	b.endLocked(l, ReasonDeadline)
	b.mu.Unlock()
	endHeld(ends, fmt.Errorf("lease %s: %w", l.id, errLeaseExpired))
}

// endLocked forgets l, remembering why it ended.
func (b *Broker) endLocked(l *lease, reason string) {
	if _, ok := b.leases[l.id]; !ok {
		return
	}
	delete(b.leases, l.id)
	l.q.held--
	l.timer.Stop()
	now := b.now()
	for len(b.endedQ) > 0 && now.Sub(b.endedQ[0].at) > endedTTL {
		delete(b.ended, b.endedQ[0].id)
		b.endedQ = b.endedQ[1:]
	}
	b.ended[l.id] = reason
	b.endedQ = append(b.endedQ, endedLease{id: l.id, at: now})
}

// offer hands c to a waiting pull, or queues it; false when the broker is
// stopped.
func (b *Broker) offer(q *queue, c *call) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return false
	}
	b.offerLocked(q, c)
	return true
}

// offerLocked hands c to a waiting pull, or queues it.
func (b *Broker) offerLocked(q *queue, c *call) {
	if len(q.waiters) > 0 {
		w := q.waiters[0]
		q.waiters = q.waiters[1:]
		w.got <- b.leaseLocked(q, []*call{c})
		return
	}
	q.pending = append(q.pending, c)
	b.armSweepLocked(q, c.giveBack)
}

// armSweepLocked makes q's sweep fire by at.
func (b *Broker) armSweepLocked(q *queue, at time.Time) {
	if !q.sweepAt.IsZero() && !at.Before(q.sweepAt) {
		return
	}
	q.sweepAt = at
	wait := max(at.Sub(b.now()), 0)
	if q.sweep == nil {
		q.sweep = time.AfterFunc(wait, func() { b.sweep(q) })
		return
	}
	q.sweep.Reset(wait)
}

// sweep gives back the pending calls of q whose giveBack passed, and arms
// the sweep for the earliest of the others.
func (b *Broker) sweep(q *queue) {
	b.mu.Lock()
	now := b.now()
	q.sweepAt = time.Time{}
	var next time.Time
	var ends []*call
	for _, c := range q.pending {
		switch {
		case !now.Before(c.giveBack):
			c.back = true
			c.signal() // its handler takes it out of pending
			ends = b.heldOverLocked(ends, c)
		case next.IsZero() || c.giveBack.Before(next):
			next = c.giveBack
		}
	}
	for _, c := range ends {
		b.unofferLocked(q, c)
	}
	if !next.IsZero() && !b.stopped {
		b.armSweepLocked(q, next)
	}
	b.mu.Unlock()
	if len(ends) > 0 {
		b.log.Debug("pull: batches given back", "queue", q.name, "calls", len(ends), "err", errNotPulled)
	}
	endHeld(ends, orderly.Snooze(0))
}

// unofferLocked takes c, which no pull took, out of q's pending calls.
func (b *Broker) unofferLocked(q *queue, c *call) {
	for i, p := range q.pending {
		if p == c {
			q.pending = append(q.pending[:i:i], q.pending[i+1:]...)
			return
		}
	}
}

// leaseLocked makes the lease of a pull that takes calls: its deadline
// is Options.Lease from now, at most the earliest call's deadline.
func (b *Broker) leaseLocked(q *queue, calls []*call) *lease {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails
	l := &lease{id: hex.EncodeToString(raw[:]), q: q, calls: calls, live: len(calls)}
	now := b.now()
	l.deadline = now.Add(b.leaseOf(q))
	for _, c := range calls {
		if l.deadline.After(c.deadline) {
			l.deadline = c.deadline
		}
		c.lease = l // its goroutine reads it when next woken: no wake-up for the pull itself
	}
	l.timer = time.AfterFunc(l.deadline.Sub(now), func() { b.expire(l) })
	b.leases[l.id] = l
	q.held++
	return l
}

// Pull takes the waiting calls of the queue, oldest first, as many as
// maxIDs ids allow, under a new lease; with none waiting it waits up to
// wait for one. It returns nil, nil when none came (or the broker stopped
// while it waited). A call is never split: maxIDs must be at least the
// queue's batch size.
func (b *Broker) Pull(ctx context.Context, queueName string, maxIDs int, wait time.Duration) (*Lease, error) {
	b.mu.Lock()
	q := b.queues[queueName]
	switch {
	case b.stopped:
		b.mu.Unlock()
		return nil, ErrStopped
	case q == nil:
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrUnknownQueue, queueName)
	case maxIDs < q.opts.BatchSize:
		b.mu.Unlock()
		return nil, fmt.Errorf("%w (%d): a batch is never split", ErrMaxIDs, q.opts.BatchSize)
	}
	if len(q.pending) > 0 {
		calls := []*call{q.pending[0]}
		ids := len(q.pending[0].batch.Jobs)
		rest := q.pending[1:]
		for len(rest) > 0 && ids+len(rest[0].batch.Jobs) <= maxIDs {
			calls = append(calls, rest[0])
			ids += len(rest[0].batch.Jobs)
			rest = rest[1:]
		}
		q.pending = rest
		l := b.leaseLocked(q, calls)
		b.mu.Unlock()
		return l.out(), nil
	}
	if wait <= 0 {
		b.mu.Unlock()
		return nil, nil
	}
	w := &waiter{got: make(chan *lease, 1)}
	q.waiters = append(q.waiters, w)
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case l := <-w.got:
		return l.out(), nil
	case <-t.C:
	case <-ctx.Done():
	case <-b.stop:
	}
	b.mu.Lock()
	for i, o := range q.waiters {
		if o == w {
			q.waiters = append(q.waiters[:i:i], q.waiters[i+1:]...)
			b.mu.Unlock()
			return nil, nil
		}
	}
	b.mu.Unlock()
	// A call came as the wait ended: it is this pull's.
	return (<-w.got).out(), nil
}

// CheckPull returns the error a pull of maxIDs ids of the queue would
// have for its values (ErrUnknownQueue, ErrMaxIDs), without pulling: an
// answer checks its next pull with it before it is taken.
func (b *Broker) CheckPull(queueName string, maxIDs int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[queueName]
	switch {
	case q == nil:
		return fmt.Errorf("%w: %q", ErrUnknownQueue, queueName)
	case maxIDs < q.opts.BatchSize:
		return fmt.Errorf("%w (%d): a batch is never split", ErrMaxIDs, q.opts.BatchSize)
	}
	return nil
}

// out is what Pull returns of l.
func (l *lease) out() *Lease {
	ids := 0
	for _, c := range l.calls {
		ids += len(c.batch.Jobs)
	}
	out := &Lease{ID: l.id, Deadline: l.deadline, Jobs: make([]wire.Job, 0, ids)}
	for _, c := range l.calls {
		out.Jobs = webhook.AppendPullJobs(out.Jobs, c.batch)
	}
	return out
}

// lookupLocked returns the live lease id of the queue, or the error that
// says why there is none.
func (b *Broker) lookupLocked(queueName, id string) (*lease, error) {
	l := b.leases[id]
	if l == nil || l.q.name != queueName {
		if reason, ok := b.ended[id]; ok && l == nil {
			return nil, &LeaseError{Reason: reason}
		}
		return nil, &LeaseError{Reason: ReasonUnknown}
	}
	if l.answered {
		return nil, &LeaseError{Reason: ReasonUnknown}
	}
	if !b.now().Before(l.deadline) {
		return nil, &LeaseError{Reason: ReasonDeadline}
	}
	return l, nil
}

// Answer hands a worker's decoded answer (nil: every id done) to the calls
// its lease holds, each its own ids' part, and returns once they took it
// (the shard actors then commit it) or refused it. It returns the ids of
// the calls that ended before the answer reached them (nothing of the
// answer is committed for those), or a *LeaseError when the lease is no
// longer valid or none of its calls took the answer, or an error wrapping
// webhook.ErrBadAnswer when its emits name ids not in the lease (the lease
// stays valid).
func (b *Broker) Answer(queueName, id string, a *wire.Answer) (lost []string, err error) {
	b.mu.Lock()
	l, err := b.lookupLocked(queueName, id)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	ids := 0
	for _, c := range l.calls {
		ids += len(c.batch.Jobs)
	}
	if a != nil { // nil: every id done, nothing to check
		all := &orderly.Batch{Queue: queueName, Jobs: make([]orderly.Job, 0, ids)}
		for _, c := range l.calls {
			all.Jobs = append(all.Jobs, c.batch.Jobs...)
		}
		if err := webhook.CheckPullAnswer(all, a); err != nil {
			b.mu.Unlock()
			return nil, err
		}
	}
	l.answered = true
	delete(b.leases, l.id)
	l.q.held--
	l.timer.Stop()
	// A call whose context ended refuses the answer (nothing of it is
	// committed); the others are taken: their goroutines wait while the
	// answer applies each one's part here, so that the answer does not
	// wait for each of them to be scheduled.
	var first error
	taken := 0
	for _, c := range l.calls {
		switch {
		case c.gone != "":
			lost = appendIDs(lost, c)
		case c.ctx.Err() != nil:
			lost = appendIDs(lost, c)
			if first == nil {
				first = &LeaseError{Reason: reasonOf(c.ctx)}
			}
		default:
			c.taken = true
			taken++
			if c.d != nil {
				b.overLocked(c)
			}
		}
	}
	b.mu.Unlock()
	for _, c := range l.calls {
		if !c.taken { // set above, under b.mu, and only there
			continue
		}
		c.err = b.apply(c, partOf(a, c.batch, len(l.calls) > 1))
		if c.d != nil {
			c.d.End(c.err) // settles the call here
			continue
		}
		c.applied.Store(true) // after err: the call reads err once it sees applied
		c.signal()
	}
	if taken == 0 || (first != nil && len(lost) == ids) {
		if first == nil {
			first = &LeaseError{Reason: l.calls[0].gone}
		}
		return nil, first
	}
	return lost, nil
}

// apply applies a call's part of an answer to its batch and returns the
// call's error; a panic fails the call's ids, as a handler's panic does.
func (b *Broker) apply(c *call, a *wire.Answer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("pull: applying an answer panicked; the batch fails", "queue", c.batch.Queue, "panic", fmt.Sprint(r),
				"stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return webhook.ApplyPullAnswer(c.batch, a, b.log)
}

// appendIDs appends the ids of c's batch to ids.
func appendIDs(ids []string, c *call) []string {
	for _, j := range c.batch.Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// partOf is the part of a that names ids of b (a itself when the lease
// has one call; nil stays nil: every id done).
func partOf(a *wire.Answer, b *orderly.Batch, split bool) *wire.Answer {
	if a == nil || !split {
		return a
	}
	in := make(map[string]bool, len(b.Jobs))
	for _, j := range b.Jobs {
		in[j.ID] = true
	}
	out := &wire.Answer{Failed: only(a.Failed, in), State: only(a.State, in), Timers: only(a.Timers, in),
		RetryIn: only(a.RetryIn, in), Dead: only(a.Dead, in), Discard: only(a.Discard, in), Result: only(a.Result, in)}
	for _, e := range a.Emit {
		if in[e.From] {
			out.Emit = append(out.Emit, e)
		}
	}
	return out
}

// only returns the entries of m whose key is in in; nil when none.
func only[V any](m map[string]V, in map[string]bool) map[string]V {
	var out map[string]V
	for k, v := range m {
		if in[k] {
			if out == nil {
				out = make(map[string]V)
			}
			out[k] = v
		}
	}
	return out
}

// Extend moves a lease's deadline to by after now, never past the
// deadline of one of its calls nor earlier than it was, and returns the
// new deadline.
func (b *Broker) Extend(queueName, id string, by time.Duration) (time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.lookupLocked(queueName, id)
	if err != nil {
		return time.Time{}, err
	}
	d := b.now().Add(by)
	for _, c := range l.calls {
		if c.gone == "" && d.After(c.deadline) {
			d = c.deadline
		}
	}
	if d.After(l.deadline) {
		l.deadline = d // expire waits for it when it fires
	}
	return l.deadline, nil
}

// Stats are the pull workers of a queue right now.
type Stats struct {
	// Waiting counts the pulls waiting for a batch.
	Waiting int `json:"waiting_workers"`
	// Held counts the leases held by workers.
	Held int `json:"held_leases"`
	// Pending counts the batches waiting for a pull.
	Pending int `json:"pending_batches"`
}

// Stats returns the stats of each pull queue.
func (b *Broker) Stats() map[string]Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]Stats, len(b.queues))
	for name, q := range b.queues {
		out[name] = Stats{Waiting: len(q.waiters), Held: q.held, Pending: len(q.pending)}
	}
	return out
}

// Stop ends the waiting pulls (they return nil) and refuses new ones
// (ErrStopped); the calls no pull took give their ids back at once. Held
// leases go on until answered or ended by their call (the node's drain).
// Call it before stopping the node. Stop is idempotent.
func (b *Broker) Stop() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.stopped = true
	close(b.stop)
	var ends []*call
	for _, q := range b.queues {
		if q.sweep != nil {
			q.sweep.Stop() // the pending calls give their ids back on stop
		}
		held := len(ends)
		for _, c := range q.pending {
			c.signal() // it sees stopped, and gives its ids back
			ends = b.heldOverLocked(ends, c)
		}
		for _, c := range ends[held:] {
			b.unofferLocked(q, c)
		}
	}
	b.mu.Unlock()
	endHeld(ends, orderly.Snooze(0))
}
