// Package engine runs a node: the actor system with its node and enqueue
// actors (actors/node) and, under the node actor, one shard actor per served
// shard (actors/shard); the store subscription whose notices it forwards to
// the node actor; the node's background services; the cluster membership
// and its service (cluster); and the stop. The root package orderly is its
// facade: it validates the user's Config, builds an engine Config from it
// (each queue's shard actor configuration carries the user's handler) and
// translates the answers.
//
// # Start
//
// Start spawns the node actor, the enqueue actor and its keeper, starts the
// actor remote and joins the cluster, then returns; the rest waits for the
// store, in the start goroutine (bootstrap.go), step by step: register the
// queues, open the store's connections, subscribe to enqueue notices, read
// the queue controls and hand them to the node actor (a paused queue stays
// paused across restarts), start the services, assign the shards (a single
// node serves all of them; in a cluster the cluster service assigns the
// node's share) and forward notices until the stop.
//
// # Services
//
// Each background loop is a service with Start and Stop, started by the
// start goroutine in this order and stopped by the stop in the reverse
// order:
//
//   - controls (controls.go): reads the queue controls every ControlPoll,
//     and at once after a controls notice or a change through this node,
//     and tells the node actor (node.Controls) when they change;
//   - periodic (periodic.go): enqueues the ticks of the periodic jobs;
//   - the cluster service (cluster.Service), in a cluster: placement, the
//     health of the store and the sweep for unserved shards.
//
// The node actor owns the loops that serve its shards (the lease renewer,
// the idle poller and the max_concurrency permit keeper); control state
// (paused queues, permits held) lives in the node actor and its shard
// actors, and reaches them as messages.
//
// # Stop
//
// The stop (stop.go) drains the shards first (each finishes or, at the
// deadline, cancels its batch, settles and releases its lease), then closes
// the subscription (which ends the forward loop), stops the services, leaves
// the cluster, stops the actor remote, the actors and the actor system.
package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// Errors of the node, wrapped or returned as they are by the facade.
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

// EnqueueActorName is the well-known name of the enqueue actor every node
// runs, the only actor reachable through the actor remote.
const EnqueueActorName = messages.EnqueueActorName

// Queue is one queue the node serves.
type Queue struct {
	// Spec is registered in the store at start.
	Spec persistence.QueueSpec
	// Shard is the configuration of each of its shard actors, but Ref and
	// Paused, which the engine and the node actor set.
	Shard shard.Config
	// MaxConcurrency is the queue's cluster-wide max_concurrency; 0: no
	// limit.
	MaxConcurrency int
	// Weight is the queue's weight for the weighted and strict
	// schedulers; 0: 1.
	Weight int
}

// Periodic is a periodic job with its schedule.
type Periodic struct {
	Name, Queue, ID string
	Payload         []byte
	// Schedule gives the next tick after a time (zero: none).
	Schedule interface{ Next(time.Time) time.Time }
}

// Remote configures the actor remote (protoactor remote over gRPC).
type Remote struct {
	// Addr is where it listens; Advertise what others dial, when it
	// differs.
	Addr, Advertise string
	// Token, when set, is required from every connecting process.
	Token string
	// TLS, when set, serves and dials with it.
	TLS *tls.Config
}

// Config configures an Engine. The facade fills every field with its
// defaults applied.
type Config struct {
	Name     string
	Store    persistence.NodeStore
	Queues   []Queue
	Periodic []Periodic
	// Concurrency, Scheduler, LeaseTTL, HandoffTimeout, IdlePoll: see
	// orderly.Config.
	Concurrency     int
	Scheduler       node.Scheduler
	LeaseTTL        time.Duration
	ShutdownTimeout time.Duration
	HandoffTimeout  time.Duration
	IdlePoll        time.Duration
	// ControlPoll is how often the queue controls are read without a
	// notice.
	ControlPoll time.Duration
	// PermitHolder names this node's max_concurrency permits in the store.
	PermitHolder string
	Clock        clock.Clock
	Logger       *slog.Logger
	// Cluster, when set, makes the node a member of a cluster; the engine
	// fills its Name, Clock, Logger and the Meta's Queues, Version, Actor
	// and Store. Nil: the node serves every shard of its queues.
	Cluster *cluster.Config
	// Remote, when set, serves the enqueue actor through the actor remote.
	Remote *Remote
	// Version is advertised to the cluster.
	Version string
}

// Engine is a node's runtime. Its methods are safe for concurrent use.
type Engine struct {
	cfg   Config
	store persistence.NodeStore
	clock clock.Clock
	log   *slog.Logger

	// seams, set by tests before Start (seams.go).
	wrapNodeProps func(*actor.Props) *actor.Props

	// life serializes Start and the beginning of a stop. Start holds it
	// across its I/O (registering the queues, joining the cluster);
	// nothing else waits on it (LOCKS.md).
	life sync.Mutex

	mu        sync.Mutex // guards the fields below; never held across I/O or a wait (LOCKS.md)
	state     state
	sys       *actor.ActorSystem
	nodePID   *actor.PID
	enqPID    *actor.PID
	keeperPID *actor.PID // spawns the enqueue actor again if it stops
	sub       persistence.Subscription
	quiet     bool                   // Quiet was called: no shards assigned
	ready     bool                   // the store was reached: shards may be assigned
	placed    bool                   // desired is known (single node: all shards; cluster: a placement came)
	share     []persistence.ShardRef // the placement's last share, never included
	adopted   []persistence.ShardRef // shards served beside the share (cluster.Service's orphan sweep)
	desired   []persistence.ShardRef // the share the node actor should serve (never excluded)
	never     map[persistence.ShardRef]bool
	members   *cluster.Membership // nil on a single node
	service   *cluster.Service    // nil on a single node
	remote    *remote.Remote
	controls  *controlWatcher
	periodic  *periodicEnqueuer
	// shapesW keeps shapes up to date (reshard.go); nil for a store that
	// cannot reshard.
	shapesW *shapeWatcher
	// shapes are the queues' shapes as last read; a queue without one has
	// the shards its configuration gives.
	shapes   map[string]persistence.QueueShape
	cancel   context.CancelFunc // ends the start goroutine
	stopping *stopRun           // set by the first Stop or StopAndCancel

	boot sync.WaitGroup // the start goroutine
}

type state int

const (
	stateNew state = iota
	stateRunning
	stateStopping
	stateStopped
)

// New returns an engine for cfg. It does no I/O.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Engine{cfg: cfg, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger}
	e.controls = newControlWatcher(e.store, e.queueNames(), cfg.ControlPoll, max(cfg.LeaseTTL, 5*time.Second), e.clock, e.log)
	e.periodic = newPeriodicEnqueuer(e.store, cfg.Periodic, e.clock, e.log)
	e.shapesW = newShapeWatcher(e.store, e.queueNames(), cfg.ControlPoll, max(cfg.LeaseTTL, 5*time.Second), e.clock, e.log)
	return e
}

// Name returns the node's name.
func (e *Engine) Name() string { return e.cfg.Name }

func (e *Engine) queueNames() []string {
	out := make([]string, len(e.cfg.Queues))
	for i, q := range e.cfg.Queues {
		out[i] = q.Spec.Name
	}
	return out
}

// allShards returns every shard of the node's queues: those of each queue's
// shape (both generations while a reshard runs), or of its configured
// count. Called with e.mu held.
func (e *Engine) allShards() []persistence.ShardRef {
	var refs []persistence.ShardRef
	for _, q := range e.cfg.Queues {
		if sh, ok := e.shapes[q.Spec.Name]; ok {
			refs = append(refs, sh.Refs(q.Spec.Name)...)
			continue
		}
		for i := range q.Spec.Shards {
			refs = append(refs, persistence.ShardRef{Queue: q.Spec.Name, Shard: i})
		}
	}
	return refs
}
