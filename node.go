package orderly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/persistence"
)

// Defaults of Config.
const (
	DefaultConcurrency     = 5
	DefaultScheduler       = "lag"
	DefaultLeaseTTL        = 3 * time.Second
	DefaultShutdownTimeout = 25 * time.Second
	DefaultHandoffTimeout  = 30 * time.Second
	DefaultMorgueTTL       = 180 * 24 * time.Hour
	DefaultIdlePoll        = 5 * time.Second
)

// Errors of the node.
var (
	// ErrNotRunning is returned by calls that need a started node.
	ErrNotRunning = errors.New("orderly: node is not running")
	// ErrNotReady is wrapped by Ready's error while the node does not yet
	// serve all its shards.
	ErrNotReady = errors.New("orderly: node not ready")
)

// Config configures a Node. The zero value of each field means its default.
type Config struct {
	// Name identifies the node in leases, logs and the cluster [hostname].
	Name string
	// Workers are the queues this node serves. At least one.
	Workers []Worker
	// Concurrency is how many batches run at once on the node
	// [DefaultConcurrency].
	Concurrency int
	// Scheduler hands the concurrency to shards with work: "lag" serves the
	// oldest due job first, "seq" serves shards in turn [DefaultScheduler].
	Scheduler string
	// LeaseTTL is how long a shard lease lives without renewal
	// [DefaultLeaseTTL]; it is renewed every third of it. After a crash,
	// another node takes the shard over once it expires.
	LeaseTTL time.Duration
	// ShutdownTimeout bounds a graceful Stop when its context has no
	// earlier deadline [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// HandoffTimeout bounds the drain of a shard that moves to another
	// node [DefaultHandoffTimeout].
	HandoffTimeout time.Duration
	// MorgueTTL is how long morgue entries are kept [DefaultMorgueTTL].
	MorgueTTL time.Duration
	// IdlePoll is how often an idle shard checks for work it was not told
	// about (enqueue notices are hints) [DefaultIdlePoll].
	IdlePoll time.Duration
	// Middleware wraps every worker's handler; the first is the outermost.
	Middleware []Middleware
	// Logger receives the node's logs, protoactor's included [slog.Default()].
	Logger *slog.Logger
	// Now is the clock used for retry times [time.Now].
	Now func() time.Time
	// Cluster, when set, makes the node a member of a cluster: it gossips
	// with the others (cluster.Config: bind address, seeds, encryption,
	// label) and serves its share of the shards. Nil serves every shard of
	// the node's queues. Name and Meta.Queues are filled in from the node.
	Cluster *cluster.Config
	// ActorAddr, when set (host:port; port 0 picks one), serves the node's
	// actors through protoactor remote, so that other processes can send
	// the enqueue actor messages.
	ActorAddr string
	// Observer, if set, receives every shard actor's batch and lease events
	// (metrics.Metrics is one).
	Observer shard.Observer
}

// Node runs workers: it serves the shards of its queues, one shard actor per
// shard, and processes their jobs.
type Node struct {
	store   persistence.Store
	cfg     Config
	log     *slog.Logger
	workers []Worker

	mu      sync.Mutex // guards the fields below
	state   nodeState
	sys     *actor.ActorSystem
	nodePID *actor.PID
	enqPID  *actor.PID
	sub     persistence.Subscription
	quiet   bool // Quiet was called: no shards assigned
	ready   bool // the store was reached: shards may be assigned
	placed  bool // a placement was sent to the node actor
	last    []persistence.ShardRef
	members *cluster.Membership // nil on a single node
	remote  *remote.Remote
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the bootstrap and notice goroutines
}

type nodeState int

const (
	stateNew nodeState = iota
	stateRunning
	stateStopped
)

// NewNode returns a node that serves cfg.Workers on store. It does no I/O.
func NewNode(store persistence.Store, cfg *Config) (*Node, error) {
	if store == nil {
		return nil, errors.New("orderly: a store is required")
	}
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "orderly"
		}
		c.Name = h
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Scheduler == "" {
		c.Scheduler = DefaultScheduler
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = DefaultHandoffTimeout
	}
	if c.MorgueTTL == 0 {
		c.MorgueTTL = DefaultMorgueTTL
	}
	if c.IdlePoll == 0 {
		c.IdlePoll = DefaultIdlePoll
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case len(c.Workers) == 0:
		return nil, errors.New("orderly: at least one worker is required")
	case c.Concurrency < 1:
		return nil, fmt.Errorf("orderly: concurrency must be at least 1, got %d", c.Concurrency)
	case c.LeaseTTL < 300*time.Millisecond:
		return nil, fmt.Errorf("orderly: lease_ttl must be at least 300ms, got %s", c.LeaseTTL)
	case c.ShutdownTimeout < 0 || c.HandoffTimeout < 0 || c.MorgueTTL < 0 || c.IdlePoll < 0:
		return nil, errors.New("orderly: durations must not be negative")
	}
	if _, err := node.ParseScheduler(c.Scheduler); err != nil {
		return nil, fmt.Errorf("orderly: %w", err)
	}
	n := &Node{store: store, cfg: c, log: c.Logger.With("node", c.Name)}
	seen := map[string]bool{}
	for i := range c.Workers {
		w := c.Workers[i].withDefaults()
		if err := w.validate(); err != nil {
			return nil, err
		}
		if seen[w.Queue] {
			return nil, fmt.Errorf("orderly: queue %s has two workers", w.Queue)
		}
		seen[w.Queue] = true
		n.workers = append(n.workers, w)
	}
	return n, nil
}

// Name returns the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Queues returns the names of the node's queues.
func (n *Node) Queues() []string {
	out := make([]string, len(n.workers))
	for i, w := range n.workers {
		out[i] = w.Queue
	}
	return out
}

// Start registers the queues, starts the actors and begins serving. It
// returns once the node runs; serving starts as soon as the store is
// reachable (Ready tells). A shard count that contradicts the store is an
// error here when the store is reachable.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch n.state {
	case stateRunning:
		return nil
	case stateStopped:
		return errors.New("orderly: a stopped node cannot start again")
	}
	regErr := n.register(ctx)
	if errors.Is(regErr, persistence.ErrShardCountMismatch) || errors.Is(regErr, persistence.ErrInvalid) {
		return regErr
	}

	// A dead letter (a timer firing for a stopped actor) starts a goroutine
	// in protoactor that lives for the throttle interval: keep it short so
	// that nothing of the node outlives Stop for long.
	n.sys = actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(n.log)),
		actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	sched, _ := node.ParseScheduler(n.cfg.Scheduler)
	nodeProps := node.Props(node.Config{
		Concurrency: n.cfg.Concurrency, Scheduler: sched, HandoffTimeout: n.cfg.HandoffTimeout, Logger: n.log,
	})
	pid, err := n.sys.Root.SpawnNamed(nodeProps, "node")
	if err != nil {
		return fmt.Errorf("orderly: spawn node actor: %w", err)
	}
	n.nodePID = pid
	enq, err := n.sys.Root.SpawnNamed(node.EnqueueProps(node.EnqueueConfig{Store: n.store, Logger: n.log, Now: n.cfg.Now, Members: n.membersMessage}).
		Configure(actor.WithSupervisor(supervisor.Node())), node.EnqueueActorName)
	if err != nil {
		return fmt.Errorf("orderly: spawn enqueue actor: %w", err)
	}
	n.enqPID = enq
	if err := n.startNetwork(); err != nil {
		n.sys.Shutdown()
		return err
	}

	bctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.state = stateRunning
	n.wg.Add(1)
	go n.bootstrap(bctx, regErr == nil)
	n.log.Info("node started", "queues", len(n.workers), "concurrency", n.cfg.Concurrency, "scheduler", n.cfg.Scheduler)
	return nil
}

func (n *Node) register(ctx context.Context) error {
	for _, w := range n.workers {
		if err := n.store.RegisterQueue(ctx, persistence.QueueSpec{Name: w.Queue, Shards: w.Shards}); err != nil {
			return err
		}
	}
	return nil
}

// bootstrap finishes starting once the store is reachable: it registers the
// queues (if Start could not), subscribes to enqueue notices and assigns the
// shards to the node actor. It then forwards notices until Stop.
func (n *Node) bootstrap(ctx context.Context, registered bool) {
	defer n.wg.Done()
	backoff := 100 * time.Millisecond
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
			backoff = min(backoff*2, 2*time.Second)
			return true
		}
	}
	for !registered {
		err := n.register(ctx)
		if err == nil {
			registered = true
			break
		}
		n.log.Warn("cannot register queues yet; retrying", "err", err)
		if !wait() {
			return
		}
	}
	var sub persistence.Subscription
	for {
		var err error
		sub, err = n.store.Subscribe(ctx, n.Queues()...)
		if err == nil {
			break
		}
		n.log.Warn("cannot subscribe to enqueue notices yet; retrying", "err", err)
		if !wait() {
			return
		}
	}
	n.mu.Lock()
	if ctx.Err() != nil { // Stop ran meanwhile and did not see this subscription
		n.mu.Unlock()
		sub.Close()
		return
	}
	n.sub = sub
	n.ready = true
	quiet := n.quiet
	n.mu.Unlock()
	if n.members != nil {
		n.wg.Add(2)
		go n.placementLoop(ctx)
		go n.healthLoop(ctx)
	} else if !quiet {
		n.assignAll()
	}
	root := n.sys.Root
	for ref := range sub.C() {
		root.Send(n.nodePID, node.Notice{Ref: ref})
	}
}

// assignAll gives the node every shard of its queues.
func (n *Node) assignAll() {
	var refs []persistence.ShardRef
	for _, w := range n.workers {
		for i := range w.Shards {
			refs = append(refs, persistence.ShardRef{Queue: w.Queue, Shard: i})
		}
	}
	n.assign(refs)
}

// assign makes the node actor serve exactly refs.
func (n *Node) assign(refs []persistence.ShardRef) {
	byQueue := map[string]Worker{}
	for _, w := range n.workers {
		byQueue[w.Queue] = w
	}
	shards := make([]shard.Config, 0, len(refs))
	for _, r := range refs {
		shards = append(shards, n.shardConfig(byQueue[r.Queue], r.Shard))
	}
	n.sys.Root.Send(n.nodePID, node.Assign{Shards: shards})
}

func (n *Node) shardConfig(w Worker, i int) shard.Config {
	sc := shard.Config{
		Ref:           persistence.ShardRef{Queue: w.Queue, Shard: i},
		Store:         n.store,
		Owner:         n.cfg.Name,
		BatchSize:     w.BatchSize,
		Prefetch:      w.Prefetch,
		MaxRetryCount: w.maxRetry(),
		RetryIn:       w.RetryIn,
		Timeout:       w.Timeout,
		Process:       n.processor(w),
		LeaseTTL:      n.cfg.LeaseTTL,
		IdlePoll:      n.cfg.IdlePoll,
		MorgueTTL:     n.cfg.MorgueTTL,
		Logger:        n.log,
		Now:           n.cfg.Now,
		Observer:      n.cfg.Observer,
	}
	if w.RetriesExhausted != nil {
		hook := w.RetriesExhausted
		sc.OnDead = func(ctx context.Context, dead []persistence.Job) { hook(ctx, toJobs(dead)) }
	}
	return sc
}

// processor adapts a worker's handler, wrapped in the server middleware, to
// the shard actor.
func (n *Node) processor(w Worker) shard.Processor {
	h := w.Handler
	for i := len(n.cfg.Middleware) - 1; i >= 0; i-- {
		h = n.cfg.Middleware[i](h)
	}
	return func(ctx context.Context, b *persistence.Batch) (map[string]string, error) {
		batch := &Batch{Queue: b.Queue, Shard: b.Shard, Delivery: shard.Delivery(b), Jobs: toJobs(b.Jobs)}
		err := h(ctx, batch)
		if err == nil {
			return nil, nil
		}
		if pf, ok := AsPartialFailure(err); ok {
			failed := make(map[string]string, len(pf.Failed))
			for id, e := range pf.Failed {
				msg := "failed"
				if e != nil && e.Error() != "" {
					msg = e.Error()
				}
				failed[id] = msg
			}
			return failed, nil
		}
		return nil, err
	}
}

// Quiet stops processing without stopping the node (SIGTSTP): every shard
// finishes its batch (within HandoffTimeout), settles and releases its
// lease; the node keeps running and answers enqueues. Resume undoes it.
func (n *Node) Quiet() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state != stateRunning {
		return ErrNotRunning
	}
	if !n.quiet {
		n.quiet = true
		n.log.Info("node quiet: shards finish their batches and are released")
		if n.members != nil {
			if err := n.members.SetMeta(func(m *cluster.Meta) { m.Draining = true }); err != nil {
				n.log.Warn("cannot advertise quiet", "err", err)
			}
		}
		n.sys.Root.Send(n.nodePID, node.Assign{})
	}
	return nil
}

// Resume makes a quiet node serve its shards again.
func (n *Node) Resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state != stateRunning {
		return ErrNotRunning
	}
	if n.quiet {
		n.quiet = false
		n.log.Info("node resumes serving")
		switch {
		case n.members != nil:
			if err := n.members.SetMeta(func(m *cluster.Meta) { m.Draining = false }); err != nil {
				n.log.Warn("cannot advertise resume", "err", err)
			}
			n.placed = false // the placement loop sends the assignment again
		case n.ready:
			n.assignAll()
		}
	}
	return nil
}

// Stop stops the node gracefully: shards stop fetching, running batches
// finish until ctx's deadline or ShutdownTimeout (whichever is first) and
// are then cancelled (a cancelled batch is delivered again later), finished
// batches are acknowledged, leases are released so that other nodes take
// over at once. It returns when every goroutine of the node has ended.
func (n *Node) Stop(ctx context.Context) error {
	deadline := time.Now().Add(n.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return n.stop(deadline)
}

// StopAndCancel stops the node at once: running handlers are cancelled (their
// batches are delivered again later), leases released.
func (n *Node) StopAndCancel(ctx context.Context) error {
	return n.stop(time.Now())
}

func (n *Node) stop(deadline time.Time) error {
	n.mu.Lock()
	if n.state != stateRunning {
		n.mu.Unlock()
		return nil
	}
	n.state = stateStopped
	sys, nodePID, enqPID := n.sys, n.nodePID, n.enqPID
	n.mu.Unlock()

	n.log.Info("node stopping", "deadline", time.Until(deadline).Round(time.Millisecond))
	if n.members != nil {
		// Others start taking the shards over now; they acquire each one
		// as soon as it is released below.
		if err := n.members.SetMeta(func(m *cluster.Meta) { m.Draining = true }); err != nil {
			n.log.Warn("cannot advertise draining", "err", err)
		}
	}
	// Shards first (each drains and releases its lease), then the actors
	// that own them, then the notice forwarder and the actor system.
	wait := time.Until(deadline) + n.cfg.LeaseTTL + 5*time.Second
	_, drainErr := sys.Root.RequestFuture(nodePID, node.Drain{Deadline: deadline}, wait).Result()
	if drainErr != nil {
		drainErr = fmt.Errorf("orderly: shards did not stop in time (a handler may ignore its context): %w", drainErr)
	}
	n.cancel()
	n.mu.Lock()
	sub := n.sub
	n.mu.Unlock()
	if sub != nil {
		sub.Close()
	}
	n.wg.Wait()
	if n.members != nil {
		if err := n.members.Leave(time.Second); err != nil {
			n.log.Warn("leaving the cluster", "err", err)
		}
	}
	if n.remote != nil {
		n.remote.Shutdown(true)
	}
	for _, pid := range []*actor.PID{nodePID, enqPID} {
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			n.log.Warn("actor did not stop in time", "actor", pid.Id, "err", err)
		}
	}
	sys.Shutdown()
	n.log.Info("node stopped")
	return drainErr
}

// Status returns the node's view of its shards.
func (n *Node) Status(ctx context.Context) (node.Status, error) {
	n.mu.Lock()
	sys, pid, state := n.sys, n.nodePID, n.state
	n.mu.Unlock()
	if state != stateRunning {
		return node.Status{}, ErrNotRunning
	}
	timeout := time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	res, err := sys.Root.RequestFuture(pid, node.StatusRequest{}, timeout).Result()
	if err != nil {
		return node.Status{}, fmt.Errorf("orderly: node status: %w", err)
	}
	st, _ := res.(node.Status)
	return st, nil
}

// Ready returns nil when the node serves every shard assigned to it: it
// holds their leases and reaches the store. Otherwise the error (wrapping
// ErrNotReady) says why.
func (n *Node) Ready(ctx context.Context) error {
	n.mu.Lock()
	quiet := n.quiet
	n.mu.Unlock()
	if quiet {
		return fmt.Errorf("%w: quiet (processing paused)", ErrNotReady)
	}
	st, err := n.Status(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotReady, err)
	}
	n.mu.Lock()
	clustered, placed := n.members != nil, n.placed
	n.mu.Unlock()
	if st.Assigned == 0 && (!clustered || !placed) {
		return fmt.Errorf("%w: no shards assigned yet (is the store reachable?)", ErrNotReady)
	}
	if st.Serving < st.Assigned {
		reason := ""
		for _, r := range st.Shards {
			if !r.Serving && r.Err != "" {
				reason = fmt.Sprintf(" (%s/%d: %s)", r.Ref.Queue, r.Ref.Shard, r.Err)
				break
			}
		}
		return fmt.Errorf("%w: serving %d of %d shards%s", ErrNotReady, st.Serving, st.Assigned, reason)
	}
	return nil
}

// ActorSystem returns the node's actor system (nil before Start), through
// which a program that embeds the node can send actor messages.
func (n *Node) ActorSystem() *actor.ActorSystem {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sys
}

// EnqueuePID returns the PID of the node's enqueue actor (nil before
// Start). It accepts *messages.Enqueue and answers *messages.EnqueueResult.
func (n *Node) EnqueuePID() *actor.PID {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.enqPID
}
