package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/internal/remoteguard"
	"github.com/orderlyhq/orderly/persistence"
)

// keeperDelay is how long the enqueue actor stays down after it stopped
// before its keeper spawns it again.
const keeperDelay = time.Second

// remoteQueueSize bounds protoactor remote's per-peer queues (its default
// preallocates 16 MiB per peer).
const remoteQueueSize = 4096

// Start registers the queues, starts the actors and begins serving; see
// orderly.Node.Start.
func (e *Engine) Start(ctx context.Context) error {
	e.life.Lock()
	defer e.life.Unlock()
	e.mu.Lock()
	st := e.state
	e.mu.Unlock()
	switch st {
	case stateRunning:
		return nil
	case stateStopping, stateStopped:
		return ErrStopped
	}
	regErr := e.register(ctx)
	if errors.Is(regErr, persistence.ErrShardCountMismatch) || errors.Is(regErr, persistence.ErrInvalid) {
		return regErr
	}

	// A dead letter (a timer firing for a stopped actor) starts a goroutine
	// in protoactor that lives for the throttle interval: keep it short so
	// that nothing of the node outlives Stop for long.
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(e.log)),
		actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	pids, err := e.spawn(sys)
	if err != nil {
		sys.Shutdown()
		return err
	}
	nw, err := e.startNetwork(ctx, sys)
	if err != nil {
		sys.Shutdown()
		return err
	}

	bctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.sys, e.nodePID, e.enqPID, e.keeperPID = sys, pids.node, pids.enqueue, pids.keeper
	e.remote, e.members, e.service = nw.remote, nw.members, nw.service
	e.cancel, e.state = cancel, stateRunning
	e.boot.Add(1)
	go e.bootstrap(bctx, regErr == nil)
	e.mu.Unlock()
	e.log.Info("node started", "queues", len(e.cfg.Queues), "concurrency", e.cfg.Concurrency, "scheduler", e.cfg.Scheduler.String())
	return nil
}

// register registers the node's queues in the store.
func (e *Engine) register(ctx context.Context) error {
	for _, q := range e.cfg.Queues {
		if err := e.store.RegisterQueue(ctx, q.Spec); err != nil {
			return err
		}
	}
	if e.shapesW == nil {
		return nil
	}
	// A queue resharded since its configuration was written has the
	// store's shards (docs/contract.md §3.17).
	view, _, err := e.shapesW.read(ctx)
	if err != nil {
		return err
	}
	for _, q := range e.cfg.Queues {
		if sh := view[q.Spec.Name]; sh.Current.Count != q.Spec.Shards {
			e.log.Info("queue resharded: serving the store's shards, not the configured count", "queue", q.Spec.Name,
				"shards", sh.Current.Count, "configured", q.Spec.Shards)
		}
	}
	e.mu.Lock()
	e.shapes = view
	e.mu.Unlock()
	return nil
}

// pids are the top-level actors Start spawns.
type pids struct{ node, enqueue, keeper *actor.PID }

// spawn spawns the node actor, the enqueue actor and the enqueue actor's
// keeper. The top-level actors get an explicit guardian strategy (restart,
// at most 10 times in 10 s); a restarted node actor recalls what it served.
func (e *Engine) spawn(sys *actor.ActorSystem) (pids, error) {
	limits, weights := map[string]int{}, map[string]int{}
	for _, q := range e.cfg.Queues {
		if q.MaxConcurrency > 0 {
			limits[q.Spec.Name] = q.MaxConcurrency
		}
		if q.Weight > 0 {
			weights[q.Spec.Name] = q.Weight
		}
	}
	nodeProps := node.Props(node.Config{
		Concurrency: e.cfg.Concurrency, Scheduler: e.cfg.Scheduler, HandoffTimeout: e.cfg.HandoffTimeout,
		Clock: e.clock, Logger: e.log, Store: e.store, LeaseTTL: e.cfg.LeaseTTL, IdlePoll: e.cfg.IdlePoll,
		Limits: limits, PermitHolder: e.cfg.PermitHolder, Weights: weights,
	}).Configure(actor.WithGuardian(supervisor.Node()))
	if e.wrapNodeProps != nil {
		nodeProps = e.wrapNodeProps(nodeProps)
	}
	var out pids
	var err error
	if out.node, err = sys.Root.SpawnNamed(nodeProps, "node"); err != nil {
		return out, fmt.Errorf("orderly: spawn node actor: %w", err)
	}
	enqProps := node.EnqueueProps(node.EnqueueConfig{Store: e.store, Logger: e.log, Now: e.clock.Now, Members: e.membersMessage}).
		Configure(actor.WithGuardian(supervisor.Node()))
	if out.enqueue, err = sys.Root.SpawnNamed(enqProps, EnqueueActorName); err != nil {
		return out, fmt.Errorf("orderly: spawn enqueue actor: %w", err)
	}
	// The enqueue actor has a well-known name that clients hold: its keeper
	// spawns it again under that name if it ever stops.
	out.keeper, err = sys.Root.SpawnNamed(node.KeeperProps(node.KeeperConfig{
		PID: out.enqueue, Props: enqProps, Name: EnqueueActorName, Delay: keeperDelay, Logger: e.log, Clock: e.clock,
	}), EnqueueActorName+"-keeper")
	if err != nil {
		return out, fmt.Errorf("orderly: spawn enqueue keeper: %w", err)
	}
	return out, nil
}

// network is what startNetwork started.
type network struct {
	remote  *remote.Remote
	members *cluster.Membership
	service *cluster.Service
}

// startNetwork starts the actor remote, the membership and the cluster
// service (its loops start once the store is reachable); ctx bounds the
// first join of the seeds. Called by Start, without e.mu.
func (e *Engine) startNetwork(ctx context.Context, sys *actor.ActorSystem) (network, error) {
	var nw network
	if e.cfg.Remote != nil {
		r, err := e.startRemote(sys, *e.cfg.Remote)
		if err != nil {
			return nw, err
		}
		nw.remote = r
	}
	if e.cfg.Cluster == nil {
		return nw, nil
	}
	c := *e.cfg.Cluster
	c.Name, c.Clock, c.Logger = e.cfg.Name, e.clock, e.log
	c.Meta.Queues, c.Meta.Version = e.queueNames(), e.cfg.Version
	if nw.remote != nil {
		c.Meta.Actor = sys.Address()
	}
	c.Meta.Store = e.knownStoreID(ctx)
	m, err := cluster.Start(ctx, &c)
	if err != nil {
		if nw.remote != nil {
			nw.remote.Shutdown(false)
		}
		return nw, fmt.Errorf("orderly: %w", err)
	}
	queues := map[string]int{}
	for _, q := range e.cfg.Queues {
		queues[q.Spec.Name] = q.Spec.Shards
	}
	nw.members = m
	nw.service = cluster.NewService(cluster.ServiceConfig{
		Members: m, Self: e.cfg.Name, Queues: queues, Shards: e.shardNumbers, Assign: e.assign, Ping: e.store.Ping,
		Owners: e.store.ShardOwners, StoreID: e.store.StoreID,
		LeaseTTL: e.cfg.LeaseTTL, Clock: e.clock, Logger: e.log,
	})
	return nw, nil
}

// storeIDTimeout bounds the first read of the store's identity at Start: a
// store that does not answer is asked again once it is reachable.
const storeIDTimeout = 2 * time.Second

// knownStoreID reads the store's identity before the node joins the
// gossip, so that it advertises it from the start; "" when the store does
// not answer (the cluster service retries). A member of another store is
// ignored for placement (cluster.StateForeign), so that a node pointed at
// another Redis cannot take this store's shards.
func (e *Engine) knownStoreID(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, storeIDTimeout)
	defer cancel()
	id, err := e.store.StoreID(ctx)
	if err != nil {
		e.log.Warn("cannot read the store's identity yet; retrying once it is reachable", "err", err)
		return ""
	}
	return id
}

// startRemote serves the node's actors at r.Addr. protoactor's remote
// panics when it cannot listen, so the address is checked first.
func (e *Engine) startRemote(sys *actor.ActorSystem, r Remote) (rem *remote.Remote, err error) {
	host, p, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %q: %w", r.Addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %q: bad port", r.Addr)
	}
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %s: %w", r.Addr, err)
	}
	if port == 0 {
		port = ln.Addr().(*net.TCPAddr).Port
	}
	ln.Close()
	defer func() {
		if v := recover(); v != nil {
			rem, err = nil, fmt.Errorf("orderly: start actor remote on %s: %v", r.Addr, v)
		}
	}()
	guard := remoteguard.New(remoteguard.Config{Token: r.Token, Targets: []string{EnqueueActorName}, Local: sys.Address, Logger: e.log})
	serverOpts := guard.ServerOptions()
	opts := []remote.ConfigOption{
		remote.WithEndpointWriterQueueSize(remoteQueueSize), remote.WithEndpointManagerQueueSize(remoteQueueSize),
	}
	if r.TLS != nil {
		// The remote answers by dialing the sender's own endpoint: both
		// directions use the same mutual TLS configuration.
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(r.TLS)))
		opts = append(opts, remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(r.TLS))))
	}
	opts = append(opts, remote.WithServerOptions(serverOpts...))
	if r.Advertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(r.Advertise))
	}
	rem = remote.NewRemote(sys, remote.Configure(host, port, opts...))
	rem.Start()
	e.log.Info("actor remote listening", "actor_addr", r.Addr, "advertised", sys.Address(), "token", r.Token != "")
	return rem, nil
}
