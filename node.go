package orderly

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/engine"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// Errors of the node.
var (
	// ErrNotRunning is returned by calls that need a started node that has
	// not begun stopping.
	ErrNotRunning = engine.ErrNotRunning
	// ErrNotReady is wrapped by Ready's error while the node does not
	// serve all the shards it should.
	ErrNotReady = engine.ErrNotReady
	// ErrStopped is returned by Start on a node that was stopped: a node
	// runs once.
	ErrStopped = engine.ErrStopped
	// ErrCancelled is the cause of a handler's ctx when an operator
	// cancelled an id of its call (docs/contract.md §3.13): test it with
	// errors.Is(context.Cause(ctx), orderly.ErrCancelled). The id's
	// payloads go to the morgue or are dropped, whatever the handler
	// returns then, unless it returns success.
	ErrCancelled = persistence.ErrCancelled
)

// ControlPoll is how often a node reads the queue-wide controls (pause)
// from the store. A change is seen at once by every node through the
// store's controls notice (persistence.ControlsNotice); the poll catches
// a notice that was missed.
const ControlPoll = time.Second

// Node runs workers: it serves the shards of its queues, one shard actor per
// shard, and processes their jobs. Its methods are safe for concurrent use.
type Node struct {
	cfg      Config // with defaults
	workers  []Worker
	periodic []PeriodicJob
	eng      *engine.Engine
}

// NewNode returns a node that serves cfg.Workers on store. It does no I/O.
func NewNode(store persistence.NodeStore, cfg *Config) (*Node, error) {
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
	n := &Node{cfg: c}
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
	if err := checkShardTotal(shards); err != nil {
		return nil, err
	}
	periodic, err := validatePeriodic(c.Periodic, n.workers)
	if err != nil {
		return nil, err
	}
	n.periodic = c.Periodic
	n.eng = engine.New(n.engineConfig(store, periodic))
	return n, nil
}

// engineConfig is what the node's runtime runs: each queue with its shard
// actors' configuration, which carries the worker's handler.
func (n *Node) engineConfig(store persistence.NodeStore, periodic []engine.Periodic) engine.Config {
	c := n.cfg
	var clk clock.Clock = clock.Real()
	if c.Clock != nil {
		clk = c.Clock
	}
	ec := engine.Config{
		Name: c.Name, Store: store, Periodic: periodic,
		Concurrency: c.Concurrency, Scheduler: node.SchedulerLag,
		LeaseTTL: c.LeaseTTL, ShutdownTimeout: c.ShutdownTimeout, HandoffTimeout: c.HandoffTimeout, IdlePoll: c.IdlePoll,
		ControlPoll: ControlPoll, Clock: clk, Logger: c.Logger.With("node", c.Name), Version: Version,
		// The permits of max_concurrency are held under the node's name and
		// a random part, so a restarted node does not take over permits of
		// its previous run.
		PermitHolder: strings.ReplaceAll(c.Name, "#", "_") + "/" + strconv.FormatUint(rand.Uint64(), 36),
	}
	switch c.Scheduler {
	case SchedulerSeq:
		ec.Scheduler = node.SchedulerSeq
	case SchedulerWeighted:
		ec.Scheduler = node.SchedulerWeighted
	case SchedulerStrict:
		ec.Scheduler = node.SchedulerStrict
	}
	for _, w := range n.workers {
		ec.Queues = append(ec.Queues, engine.Queue{
			Spec: w.spec(), Shard: n.shardConfig(store, w, ec), MaxConcurrency: w.MaxConcurrency, Weight: w.Weight,
		})
	}
	if c.ActorAddr != "" {
		ec.Remote = &engine.Remote{Addr: c.ActorAddr, Advertise: c.ActorAdvertise, Token: c.ActorToken, TLS: c.ActorTLS}
	}
	if cc := c.Cluster; cc != nil {
		ec.Cluster = &cluster.Config{
			Bind: cc.Bind, Advertise: cc.Advertise, Join: cc.Join, RejoinInterval: cc.RejoinInterval,
			ProbeInterval: cc.ProbeInterval, ProbeTimeout: cc.ProbeTimeout, SuspicionMult: cc.SuspicionMult,
			SecretKey: cc.SecretKey, Label: cc.Label, Transport: cc.transport, Resolver: cc.resolver, Meta: cluster.Meta{HTTP: cc.HTTP},
		}
	}
	return ec
}

// shardConfig is the configuration of the worker's shard actors, but their
// Ref.
func (n *Node) shardConfig(store persistence.NodeStore, w Worker, ec engine.Config) shard.Config {
	sc := shard.Config{
		Store:       store,
		Owner:       n.cfg.Name,
		BatchSize:   w.BatchSize,
		Prefetch:    w.Prefetch,
		MaxPrefetch: w.MaxPrefetch,
		// 0: one call after the other.
		ConcurrentCalls: w.ConcurrentCalls,
		MaxRetryCount:   w.maxRetry(),
		MaxPayloads:     w.MaxPayloadsPerCall,
		CallTimeout:     w.Timeout,
		Stateful:        w.State,
		MaxStateBytes:   w.MaxStateBytes,
		FeedMaxLen:      max(w.FeedMaxLen, 0),
		Process:         n.processor(w, ec),
		LeaseTTL:        n.cfg.LeaseTTL,
		IdlePoll:        n.cfg.IdlePoll,
		MorgueTTL:       n.cfg.MorgueTTL,
		Clock:           ec.Clock,
		// Kept only by a store that keeps finished records.
		RetainFinished: w.RetainFinished,
		MaxFinished:    w.MaxFinished,
		Logger:         ec.Logger,
	}
	if r := w.RateLimit; r != nil {
		sc.RateLimit = &shard.RateLimit{PerSecond: r.PerSecond, Burst: r.Burst}
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
func (n *Node) Start(ctx context.Context) error { return n.eng.Start(ctx) }

// Stop stops the node gracefully: shards stop fetching, running handlers may
// finish until the stop deadline and are cancelled then (a cancelled batch
// goes back to the queue unchanged and is delivered again), finished
// batches are acknowledged, leases released so that other nodes take over
// at once, and every goroutine of the node ends. Stop returns once the node
// has stopped, with nil or the reason the stop was incomplete.
//
// The stop deadline is ShutdownTimeout after the first Stop or ctx's
// deadline, whichever is earlier; a later Stop or StopAndCancel can only
// bring it forward. If ctx ends before the node has stopped, Stop cancels
// the running handlers at once, as StopAndCancel does, and waits at most
// 2 s more; if the node still has not stopped (a handler that ignores its
// context, an unreachable store) it returns an error wrapping ctx.Err()
// while the node goes on stopping, and another Stop or StopAndCancel waits
// for it again. Stop on a node that never started does nothing.
func (n *Node) Stop(ctx context.Context) error { return n.eng.Stop(ctx) }

// StopAndCancel stops the node at once: running handlers are cancelled
// (their batches go back to the queue unchanged and are delivered again),
// leases released. Called while a Stop runs, it cuts that stop short (a
// second SIGTERM); either call returns once the node has stopped. ctx bounds
// the wait as for Stop.
func (n *Node) StopAndCancel(ctx context.Context) error { return n.eng.StopAndCancel(ctx) }

// Quiet stops processing without stopping the node (SIGTSTP): every shard
// finishes its batch (within HandoffTimeout), settles and releases its
// lease; the node keeps running and answers enqueues. In a cluster it
// advertises itself as draining, waiting until ctx ends for the broadcast,
// so that the others take its shards over. Resume undoes it.
func (n *Node) Quiet(ctx context.Context) error { return n.eng.Quiet(ctx) }

// IsQuiet reports whether the node is quiet (Quiet was called, Resume not
// since).
func (n *Node) IsQuiet() bool { return n.eng.IsQuiet() }

// Resume makes a quiet node serve its shards again; in a cluster it
// advertises itself as serving, waiting until ctx ends for the broadcast.
func (n *Node) Resume(ctx context.Context) error { return n.eng.Resume(ctx) }

// Status returns the node's view of the shards it should serve.
func (n *Node) Status(ctx context.Context) (NodeStatus, error) {
	st, err := n.eng.Status(ctx)
	if err != nil {
		return NodeStatus{}, err
	}
	out := NodeStatus{Assigned: st.Assigned, Serving: st.Serving, Waiting: st.Waiting, Running: st.Running}
	for _, r := range st.Shards {
		out.Shards = append(out.Shards, ShardStatus{Ref: r.Ref, Serving: r.Serving, Epoch: r.Epoch, Err: r.Err, StuckSince: r.StuckSince})
	}
	return out, nil
}

// Ready returns nil when the node serves every shard it should: it reached
// the store, knows its share (in a cluster: its part of the placement,
// which may be empty when there are more nodes than shards), and holds the
// lease of each of those shards. Otherwise the error (wrapping ErrNotReady)
// says why.
func (n *Node) Ready(ctx context.Context) error { return n.eng.Ready(ctx) }

// PauseQueue pauses the queue cluster-wide (docs/contract.md §9): it keeps
// accepting enqueues, no node starts a new handler call of it, and calls
// already running finish. The state is kept in the store, so it survives
// restarts. This node takes it before PauseQueue returns (no call of the
// queue starts here afterwards, unless ctx ended first); every other node
// sees it at once through the store's notice, and within ControlPoll when
// it missed the notice. Any queue registered in the store can be paused,
// served by this node or not; persistence.ErrUnknownQueue otherwise.
func (n *Node) PauseQueue(ctx context.Context, queue string) error {
	return n.eng.SetPaused(ctx, queue, true)
}

// ResumeQueue undoes PauseQueue.
func (n *Node) ResumeQueue(ctx context.Context, queue string) error {
	return n.eng.SetPaused(ctx, queue, false)
}

// QueuePaused reports whether the node holds the queue as paused, as it
// last read the store (at once after a controls notice, at most
// ControlPoll ago while the store answers). It is false for a queue the
// node does not serve.
func (n *Node) QueuePaused(queue string) bool { return n.eng.Paused(queue) }

// AskEnqueue hands m to the node's enqueue actor, as another process does
// through the actor remote (Config.ActorAddr, messages.EnqueueActorName),
// and returns its answer. Errors about the request itself (a bad job, an
// unknown queue, a busy node) are in the answer; the error says that no
// answer came (the node is not running, or ctx ended).
func (n *Node) AskEnqueue(ctx context.Context, m *messages.Enqueue) (*messages.EnqueueResult, error) {
	return ask[*messages.EnqueueResult](ctx, n, m)
}

// AskStats hands m to the node's enqueue actor and returns its answer, as
// AskEnqueue does.
func (n *Node) AskStats(ctx context.Context, m *messages.StatsRequest) (*messages.StatsResponse, error) {
	return ask[*messages.StatsResponse](ctx, n, m)
}

func ask[T any](ctx context.Context, n *Node, m any) (T, error) {
	var zero T
	res, err := n.eng.Ask(ctx, m)
	if err != nil {
		return zero, err
	}
	out, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("orderly: ask the enqueue actor: unexpected answer %T", res)
	}
	return out, nil
}

// Members returns the cluster's members as this node sees them, itself
// included, by name; a node without a cluster is a member alone.
func (n *Node) Members() []Member {
	var out []Member
	clustered := n.cfg.Cluster != nil
	for _, c := range n.eng.Members() {
		m := Member{
			Name: c.Name, State: MemberState(c.State), HTTP: c.Meta.HTTP, Actor: c.Meta.Actor,
			Version: c.Meta.Version, Queues: c.Meta.Queues, Unhealthy: c.Meta.Unhealthy,
		}
		if clustered {
			m.Addr, m.Since = c.Addr, c.Since
		}
		out = append(out, m)
	}
	return out
}

// Periodic returns the node's periodic jobs with their last and next tick.
func (n *Node) Periodic(ctx context.Context) ([]PeriodicStatus, error) {
	st, err := n.eng.Periodic(ctx)
	if err != nil || len(st) == 0 {
		return nil, err
	}
	out := make([]PeriodicStatus, len(st))
	for i, s := range st {
		j := n.periodic[i]
		out[i] = PeriodicStatus{Name: j.Name, Queue: j.Queue, Schedule: scheduleString(j.Schedule), ID: j.ID, Last: s.Last, Next: s.Next}
	}
	return out, nil
}
