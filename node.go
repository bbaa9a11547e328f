package orderly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// EnqueueActorName is the well-known name of the enqueue actor every node
// runs. A process that reaches a node's ActorAddr through protoactor
// remote sends it *messages.Enqueue (answered with *messages.EnqueueResult),
// *messages.StatsRequest and *messages.MembersRequest at
// actor.NewPID(actorAddr, EnqueueActorName); Node.Ask does the same from
// inside the node's process. It is the only actor reachable remotely, and
// a keeper spawns it again under this name if it stops.
const EnqueueActorName = "enqueue"

// keeperDelay is how long the enqueue actor stays down after it stopped
// before its keeper spawns it again.
const keeperDelay = time.Second

// Errors of the node.
var (
	// ErrNotRunning is returned by calls that need a started node that has
	// not begun stopping.
	ErrNotRunning = errors.New("orderly: node is not running")
	// ErrNotReady is wrapped by Ready's error while the node does not
	// serve all the shards it should.
	ErrNotReady = errors.New("orderly: node not ready")
	// ErrStopped is returned by Start on a node that was stopped: a node
	// runs once.
	ErrStopped = errors.New("orderly: a stopped node cannot start again")
)

// Bounds of the node's requests to its own actors when the caller's context
// has no earlier deadline.
const (
	statusTimeout = time.Second
	// askTimeout exceeds the enqueue actor's own bound on a request's
	// store calls (10 s), so that its answer, not this bound, ends a slow
	// request.
	askTimeout = 15 * time.Second
)

// Node runs workers: it serves the shards of its queues, one shard actor per
// shard, and processes their jobs. Its methods are safe for concurrent use.
type Node struct {
	store   persistence.Store
	cfg     Config // with defaults
	clock   clock.Clock
	log     *slog.Logger
	workers []Worker
	ctl     *queueControls // the queue controls as last read (pause, permits)
	// controlPoll is how often the controls are read without a notice:
	// ControlPoll, or what a test set (export_test.go) before Start.
	controlPoll time.Duration
	// periodic are the validated periodic jobs.
	periodic []periodic
	// permitHolder names this node's max_concurrency permits in the store:
	// its name and a random part, so a restarted node does not take over
	// permits of its previous run.
	permitHolder string
	// wrapNodeProps, set by tests only (export_test.go), adjusts the node
	// actor's props before it is spawned.
	wrapNodeProps func(*actor.Props) *actor.Props

	// life serializes Start and the beginning of a stop. Start holds it
	// across its I/O (registering the queues, joining the cluster);
	// nothing else waits on it (LOCKS.md).
	life sync.Mutex

	mu       sync.Mutex // guards the fields below; never held across I/O or a wait (LOCKS.md)
	state    nodeState
	sys      *actor.ActorSystem
	nodePID  *actor.PID
	enqPID   *actor.PID
	sub      persistence.Subscription
	quiet    bool                   // Quiet was called: no shards assigned
	ready    bool                   // the store was reached: shards may be assigned
	placed   bool                   // desired is known (single node: all shards; cluster: a placement came)
	desired  []persistence.ShardRef // the shards the node actor should serve
	last     node.Assign            // the last Assign sent, for a node actor that restarts
	members  *cluster.Membership    // nil on a single node
	service  *cluster.Service       // nil on a single node
	remote   *remote.Remote
	cancel   context.CancelFunc // ends the bootstrap goroutine
	stopping *stopRun           // set by the first Stop or StopAndCancel

	keeperPID *actor.PID // spawns the enqueue actor again if it stops; guarded by mu

	// Unserved shards (orphans.go), guarded by mu.
	free    map[persistence.ShardRef]freeShard // shards of the node's queues nobody held at the last sweep
	adopted map[persistence.ShardRef]time.Time // shards served beside the placement's share, and since when
	never   map[persistence.ShardRef]bool      // test seam: shards this node never serves
	share   []persistence.ShardRef             // the placement's last share, n.never included
	noRelay bool                               // test seam: never relay outboxes (emits wait for the next owner)

	boot sync.WaitGroup // the bootstrap goroutine
}

type nodeState int

const (
	stateNew nodeState = iota
	stateRunning
	stateStopping
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
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	var clk clock.Clock = clock.Real()
	if c.Clock != nil {
		clk = c.Clock
	}
	n := &Node{store: store, cfg: c, clock: clk, log: c.Logger.With("node", c.Name)}
	seen := map[string]bool{}
	shards := 0
	for i := range c.Workers {
		w := c.Workers[i].withDefaults()
		if err := w.validate(); err != nil {
			return nil, err
		}
		if seen[w.Queue] {
			return nil, fmt.Errorf("orderly: queue %s has two workers", w.Queue)
		}
		seen[w.Queue] = true
		shards += w.Shards
		n.workers = append(n.workers, w)
	}
	if err := CheckShardTotal(shards); err != nil {
		return nil, err
	}
	n.ctl = newQueueControls(n.workers)
	n.controlPoll = ControlPoll
	p, err := validatePeriodic(c.Periodic, n.workers)
	if err != nil {
		return nil, err
	}
	n.periodic = p
	n.permitHolder = strings.ReplaceAll(n.cfg.Name, "#", "_") + "/" + strconv.FormatUint(rand.Uint64(), 36)
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
// error here when the store is reachable. With Config.Cluster, ctx bounds
// the first join of the seeds: a ctx that ends before they answered fails
// Start (a seed that refuses at once is retried in the background).
// Starting a running node does nothing; a stopped node cannot start again
// (ErrStopped).
func (n *Node) Start(ctx context.Context) error {
	n.life.Lock()
	defer n.life.Unlock()
	n.mu.Lock()
	state := n.state
	n.mu.Unlock()
	switch state {
	case stateRunning:
		return nil
	case stateStopping, stateStopped:
		return ErrStopped
	}
	regErr := n.register(ctx)
	if errors.Is(regErr, persistence.ErrShardCountMismatch) || errors.Is(regErr, persistence.ErrInvalid) {
		return regErr
	}

	// A dead letter (a timer firing for a stopped actor) starts a goroutine
	// in protoactor that lives for the throttle interval: keep it short so
	// that nothing of the node outlives Stop for long.
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(n.log)),
		actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	sched := node.SchedulerLag
	if n.cfg.Scheduler == SchedulerSeq {
		sched = node.SchedulerSeq
	}
	// The top-level actors get an explicit guardian strategy (restart, at
	// most 10 times in 10 s); a restarted node actor reads its assignment
	// back through Restore.
	var demand func(map[string]int)
	if len(n.ctl.limit) > 0 {
		demand = n.ctl.setDemand // only limited queues need it
	}
	nodeProps := node.Props(node.Config{
		Concurrency: n.cfg.Concurrency, Scheduler: sched, HandoffTimeout: n.cfg.HandoffTimeout,
		Clock: n.clock, Logger: n.log, Restore: n.restore, Blocked: n.ctl.blocked, Demand: demand,
		Store: n.store, LeaseTTL: n.cfg.LeaseTTL, IdlePoll: n.cfg.IdlePoll,
	}).Configure(actor.WithGuardian(supervisor.Node()))
	if n.wrapNodeProps != nil {
		nodeProps = n.wrapNodeProps(nodeProps)
	}
	nodePID, err := sys.Root.SpawnNamed(nodeProps, "node")
	if err != nil {
		sys.Shutdown()
		return fmt.Errorf("orderly: spawn node actor: %w", err)
	}
	enqProps := node.EnqueueProps(node.EnqueueConfig{Store: n.store, Logger: n.log, Now: n.clock.Now, Members: n.membersMessage}).
		Configure(actor.WithGuardian(supervisor.Node()))
	enqPID, err := sys.Root.SpawnNamed(enqProps, EnqueueActorName)
	if err != nil {
		sys.Shutdown()
		return fmt.Errorf("orderly: spawn enqueue actor: %w", err)
	}
	// The enqueue actor has a well-known name that clients hold: its keeper
	// spawns it again under that name if it ever stops.
	keeperPID, err := sys.Root.SpawnNamed(node.KeeperProps(node.KeeperConfig{
		PID: enqPID, Props: enqProps, Name: EnqueueActorName, Delay: keeperDelay, Logger: n.log,
	}), EnqueueActorName+"-keeper")
	if err != nil {
		sys.Shutdown()
		return fmt.Errorf("orderly: spawn enqueue keeper: %w", err)
	}
	nw, err := n.startNetwork(ctx, sys)
	if err != nil {
		sys.Shutdown()
		return err
	}

	bctx, cancel := context.WithCancel(context.Background())
	n.mu.Lock()
	n.sys, n.nodePID, n.enqPID, n.keeperPID = sys, nodePID, enqPID, keeperPID
	n.remote, n.members, n.service = nw.remote, nw.members, nw.service
	n.cancel, n.state = cancel, stateRunning
	n.boot.Add(1)
	go n.bootstrap(bctx, regErr == nil)
	n.mu.Unlock()
	n.log.Info("node started", "queues", len(n.workers), "concurrency", n.cfg.Concurrency, "scheduler", n.cfg.Scheduler)
	return nil
}

func (n *Node) register(ctx context.Context) error {
	for _, w := range n.workers {
		spec := persistence.QueueSpec{Name: w.Queue, Shards: w.Shards}
		if w.State {
			spec.Stateful, spec.FeedMaxLen = true, max(w.FeedMaxLen, 0) // NoFeed: 0
		}
		if err := n.store.RegisterQueue(ctx, spec); err != nil {
			return err
		}
	}
	return nil
}

// bootstrap finishes starting once the store is reachable: it registers the
// queues (if Start could not), subscribes to enqueue notices and assigns the
// shards to the node actor (or starts the cluster service, which does). It
// then forwards notices until Stop.
func (n *Node) bootstrap(ctx context.Context, registered bool) {
	defer n.boot.Done()
	backoff := 100 * time.Millisecond
	wait := func() bool {
		if clock.Sleep(ctx, n.clock, backoff) != nil {
			return false
		}
		backoff = min(backoff*2, 2*time.Second)
		return true
	}
	for !registered {
		err := n.register(ctx)
		if err == nil {
			break
		}
		n.log.Warn("cannot register queues yet; retrying", "err", err)
		if !wait() {
			return
		}
	}
	n.warm(ctx)
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
	// A paused queue stays paused across restarts: read the controls
	// before serving anything, then keep watching them.
	for {
		_, err := n.readControls(ctx)
		if err == nil {
			break
		}
		n.log.Warn("cannot read the queue controls yet; retrying", "err", err)
		if !wait() {
			sub.Close()
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
	n.boot.Add(1)
	go n.watchControls(ctx)
	if len(n.ctl.limit) > 0 {
		n.boot.Add(1)
		go n.keepPermits(ctx)
	}
	if len(n.periodic) > 0 {
		n.boot.Add(1)
		go n.runPeriodic(ctx)
	}
	service, members := n.service, n.members
	if service == nil {
		n.assignLocked(n.allShards())
	}
	sys, pid := n.sys, n.nodePID
	n.mu.Unlock()
	if service != nil {
		n.identify(ctx, members, wait)
		if err := service.Start(ctx); err != nil {
			n.log.Warn("cluster service did not start", "err", err)
		}
		n.boot.Add(1)
		go n.sweepOrphans(ctx)
	}
	for ref := range sub.C() {
		if ref.Shard == persistence.ControlsNotice {
			n.ctl.refresh()
			continue
		}
		sys.Root.Send(pid, node.Notice{Ref: ref})
	}
}

// warmer is a store that can open its connections ahead of use
// (redisstore.Store.Warm).
type warmer interface {
	Warm(ctx context.Context, conns int) error
}

// warmTimeout bounds the warm-up of the store's connections.
const warmTimeout = 5 * time.Second

// warm opens the store's connections before the node serves shards, so
// that a lease call does not wait for a new connection's handshake: two
// per shard of the node's queues (a shard's own call and its renewal) and
// a few for the rest, as far as the store's pool allows.
func (n *Node) warm(ctx context.Context) {
	w, ok := n.store.(warmer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	if err := w.Warm(ctx, 2*len(n.allShards())+4); err != nil {
		n.log.Debug("cannot open the store's connections ahead of use", "err", err)
	}
}

// allShards returns every shard of the node's queues.
func (n *Node) allShards() []persistence.ShardRef {
	var refs []persistence.ShardRef
	for _, w := range n.workers {
		for i := range w.Shards {
			refs = append(refs, persistence.ShardRef{Queue: w.Queue, Shard: i})
		}
	}
	return refs
}

// assign makes the node serve refs (the cluster service's placement). A
// placement that changed gives the adopted shards back (orphans.go).
func (n *Node) assign(refs []persistence.ShardRef) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Equal(n.withoutNever(refs), n.desired) && len(n.adopted) > 0 {
		n.log.Info("placement changed: giving back the adopted shards", "adopted", len(n.adopted))
		n.adopted = nil
	}
	n.assignLocked(refs)
}

// assignLocked sends the node actor its shards: refs and the adopted ones,
// or none while quiet. Called with n.mu held; it only sends a message.
func (n *Node) assignLocked(refs []persistence.ShardRef) {
	if n.state != stateRunning {
		return
	}
	if n.quiet {
		refs, n.adopted = nil, nil
	}
	n.share = refs
	refs = n.withoutNever(refs)
	n.placed, n.desired = true, refs
	served := n.servedLocked(refs)
	byQueue := map[string]Worker{}
	for _, w := range n.workers {
		byQueue[w.Queue] = w
	}
	shards := make([]shard.Config, 0, len(served))
	for _, r := range served {
		shards = append(shards, n.shardConfig(byQueue[r.Queue], r.Shard))
	}
	n.last = node.Assign{Shards: shards}
	n.sys.Root.Send(n.nodePID, n.last)
}

// withoutNever drops the shards of the test seam n.never from refs. Called
// with n.mu held.
func (n *Node) withoutNever(refs []persistence.ShardRef) []persistence.ShardRef {
	if len(n.never) == 0 {
		return refs
	}
	return slices.DeleteFunc(slices.Clone(refs), func(r persistence.ShardRef) bool { return n.never[r] })
}

// restore tells a (re)starting node actor what to serve (node.Config.Restore).
func (n *Node) restore() (node.Assign, *node.Drain) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping != nil {
		return node.Assign{}, n.stopping.drainMessage()
	}
	return n.last, nil
}

func (n *Node) shardConfig(w Worker, i int) shard.Config {
	sc := shard.Config{
		Ref:           persistence.ShardRef{Queue: w.Queue, Shard: i},
		Store:         n.store,
		Owner:         n.cfg.Name,
		BatchSize:     w.BatchSize,
		Prefetch:      w.Prefetch,
		MaxPrefetch:   w.MaxPrefetch,
		MaxRetryCount: w.maxRetry(),
		MaxPayloads:   w.MaxPayloadsPerCall,
		CallTimeout:   w.Timeout,
		Stateful:      w.State,
		MaxStateBytes: w.MaxStateBytes,
		FeedMaxLen:    max(w.FeedMaxLen, 0),
		Process:       n.processor(w),
		LeaseTTL:      n.cfg.LeaseTTL,
		IdlePoll:      n.cfg.IdlePoll,
		MorgueTTL:     n.cfg.MorgueTTL,
		Clock:         n.clock,
		Logger:        n.log,
		Paused:        n.ctl.pausedFunc(w.Queue),
		Throttle:      n.throttle(w),
		SkipRelay:     n.noRelay,
	}
	if n.cfg.Observer != nil {
		sc.Observer = n.cfg.Observer
	}
	if w.RetriesExhausted != nil {
		hook := w.RetriesExhausted
		sc.OnDead = func(ctx context.Context, dead []persistence.Job) { hook(ctx, toJobs(dead)) }
	}
	return sc
}

// Quiet stops processing without stopping the node (SIGTSTP): every shard
// finishes its batch (within HandoffTimeout), settles and releases its
// lease; the node keeps running and answers enqueues. In a cluster it
// advertises itself as draining, waiting until ctx ends for the broadcast,
// so that the others take its shards over. Resume undoes it.
func (n *Node) Quiet(ctx context.Context) error {
	n.mu.Lock()
	if n.state != stateRunning {
		n.mu.Unlock()
		return ErrNotRunning
	}
	if n.quiet {
		n.mu.Unlock()
		return nil
	}
	n.quiet = true
	n.assignLocked(nil)
	members := n.members
	n.mu.Unlock()
	n.log.Info("node quiet: shards finish their batches and are released")
	if members != nil {
		if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Draining = true }); err != nil {
			n.log.Warn("cannot advertise quiet", "err", err)
		}
	}
	return nil
}

// Resume makes a quiet node serve its shards again; in a cluster it
// advertises itself as serving, waiting until ctx ends for the broadcast.
func (n *Node) Resume(ctx context.Context) error {
	n.mu.Lock()
	if n.state != stateRunning {
		n.mu.Unlock()
		return ErrNotRunning
	}
	if !n.quiet {
		n.mu.Unlock()
		return nil
	}
	n.quiet = false
	members, service := n.members, n.service
	switch {
	case members != nil:
		n.placed = false // not ready until the placement loop sends the share again
	case n.ready:
		n.assignLocked(n.allShards())
	}
	n.mu.Unlock()
	n.log.Info("node resumes serving")
	if members != nil {
		if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Draining = false }); err != nil {
			n.log.Warn("cannot advertise resume", "err", err)
		}
		service.Refresh() // the placement may not have changed meanwhile
	}
	return nil
}

// Status returns the node's view of the shards it should serve.
func (n *Node) Status(ctx context.Context) (NodeStatus, error) {
	st, err := n.status(ctx)
	if err != nil {
		return NodeStatus{}, err
	}
	out := NodeStatus{Assigned: st.Assigned, Serving: st.Serving, Waiting: st.Waiting, Running: st.Running}
	for _, r := range st.Shards {
		out.Shards = append(out.Shards, ShardStatus{Ref: r.Ref, Serving: r.Serving, Epoch: r.Epoch, Err: r.Err, StuckSince: r.StuckSince})
	}
	return out, nil
}

func (n *Node) status(ctx context.Context) (node.Status, error) {
	n.mu.Lock()
	sys, pid, state := n.sys, n.nodePID, n.state
	n.mu.Unlock()
	if state != stateRunning {
		return node.Status{}, ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	res, err := request(ctx, sys, pid, node.StatusRequest{})
	if err != nil {
		return node.Status{}, fmt.Errorf("orderly: node status: %w", err)
	}
	st, ok := res.(node.Status)
	if !ok {
		return node.Status{}, fmt.Errorf("orderly: node status: unexpected answer %T", res)
	}
	return st, nil
}

// Ready returns nil when the node serves every shard it should: it reached
// the store, knows its share (in a cluster: its part of the placement,
// which may be empty when there are more nodes than shards), and holds the
// lease of each of those shards. Otherwise the error (wrapping ErrNotReady)
// says why.
func (n *Node) Ready(ctx context.Context) error {
	n.mu.Lock()
	state, quiet, ready, placed, desired := n.state, n.quiet, n.ready, n.placed, n.desired
	unserved := n.unservedLocked(n.clock.Now())
	n.mu.Unlock()
	switch {
	case state != stateRunning:
		return fmt.Errorf("%w: %w", ErrNotReady, ErrNotRunning)
	case quiet:
		return fmt.Errorf("%w: quiet (processing paused)", ErrNotReady)
	case !ready:
		return fmt.Errorf("%w: the store was not reached yet", ErrNotReady)
	case !placed:
		return fmt.Errorf("%w: no placement yet", ErrNotReady)
	}
	st, err := n.status(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	reports := make(map[persistence.ShardRef]shard.Report, len(st.Shards))
	for _, r := range st.Shards {
		reports[r.Ref] = r
	}
	serving, reason := 0, ""
	for _, ref := range desired {
		r, ok := reports[ref]
		if !ok {
			// A node actor that restarted and has not restored its
			// assignment yet serves nothing.
			return fmt.Errorf("%w: shard %s is not assigned to the node actor yet", ErrNotReady, ref)
		}
		if r.Serving {
			serving++
		} else if r.Err != "" && reason == "" {
			reason = fmt.Sprintf(" (%s: %s)", r.Ref, r.Err)
		}
	}
	if serving < len(desired) {
		return fmt.Errorf("%w: serving %d of %d shards%s", ErrNotReady, serving, len(desired), reason)
	}
	// A shard of the node's queues that no node serves (docs/contract.md
	// §2.4): the node is not ready while it lasts, even if its own share
	// is served.
	return unserved
}

// Ask sends msg to the node's enqueue actor, the well-known actor that
// other processes reach through ActorAddr (EnqueueActorName), and returns
// its answer: *messages.Enqueue is answered with *messages.EnqueueResult,
// *messages.StatsRequest with *messages.StatsResponse and
// *messages.MembersRequest with *messages.MembersResponse. Errors about the
// request itself (a bad job, an unknown queue, a busy node) are in the
// answer; Ask's error says that no answer came (the node is not running,
// or ctx ended).
func (n *Node) Ask(ctx context.Context, msg proto.Message) (proto.Message, error) {
	switch msg.(type) {
	case *messages.Enqueue, *messages.StatsRequest, *messages.MembersRequest:
	default:
		return nil, fmt.Errorf("orderly: the enqueue actor does not accept %T", msg)
	}
	n.mu.Lock()
	sys, pid, state := n.sys, n.enqPID, n.state
	n.mu.Unlock()
	if state != stateRunning {
		return nil, ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	res, err := request(ctx, sys, pid, msg)
	if err != nil {
		return nil, fmt.Errorf("orderly: ask the enqueue actor: %w", err)
	}
	out, ok := res.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("orderly: ask the enqueue actor: unexpected answer %T", res)
	}
	return out, nil
}
