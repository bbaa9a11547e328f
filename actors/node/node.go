// Package node implements the node actor, which owns this node's shard
// actors (it is their supervisor), grants the node-wide concurrency limit to
// them, forwards enqueue notices, tracks readiness and runs the graceful
// drain; and the enqueue actor, the well-known actor every node runs to
// accept Enqueue messages.
//
// The set of shards a node serves is given by Assign: all shards of its
// queues on a single node, the node's share under the cluster's placement.
// Assign reconciles: shards no longer assigned drain (finish or cancel their
// batch within the handoff timeout, settle, release the lease) and stop; new
// ones are spawned once a previous actor of the same shard is gone.
//
// The facade (orderly.Node) is the source of truth for what the node
// serves: a node actor that starts, also after a restart by its guardian
// (its shard actors were stopped with the old instance), reads the last
// Assign and any Drain from Config.Restore and serves again at once.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Config configures the node actor. Concurrency and HandoffTimeout are
// required (the facade passes orderly's defaults).
type Config struct {
	// Concurrency is how many batches may run at once on the node.
	Concurrency int
	Scheduler   Scheduler
	// HandoffTimeout bounds the drain of a shard that moves to another node.
	HandoffTimeout time.Duration
	// Clock dates handoff deadlines [clock.Real()].
	Clock  clock.Clock
	Logger *slog.Logger
	// Blocked, if set, tells whether a shard of queue may not start a
	// batch while others of the queue's shards run one on this node (a
	// paused queue, or the node's share of its max_concurrency,
	// docs/contract.md §9). It is called from the actor's goroutine and
	// must not block; after its answers change, send Unblocked so that
	// waiting shards are served.
	Blocked func(queue string, others int) bool
	// Demand, if set, hears how many shards of each queue hold or wait for
	// a permit, whenever that changes (a queue with none is reported as
	// 0 once). It is called from the actor's goroutine and must not block.
	Demand func(demand map[string]int)
	// Restore, if set, returns what a starting actor must serve: the last
	// Assign the facade sent and, once the node stops, its Drain (nil
	// before). It is called on every *actor.Started, from the actor's
	// goroutine; it must not block.
	Restore func() (Assign, *Drain)
	// Store, if set, makes the actor renew its shards' leases together:
	// it runs a shard.Renewer of LeaseTTL (the shards' LeaseTTL) on Store
	// from its start to its stop, one round trip per LeaseTTL/3 for all of
	// them. Nil: each shard actor renews its own lease.
	Store    persistence.Store
	LeaseTTL time.Duration
	// IdlePoll, with Store, makes the actor poll its idle shards together:
	// it runs a shard.Poller of that interval (the shards' IdlePoll) on
	// Store from its start to its stop, one round trip per IdlePoll for all
	// of them. 0: each idle shard actor polls on its own.
	IdlePoll time.Duration
}

// Messages the node actor accepts.
type (
	// Assign sets the shards the node serves, with each shard actor's
	// configuration.
	Assign struct{ Shards []shard.Config }

	// Notice wakes the actor of a shard (jobs were enqueued into it).
	Notice struct{ Ref persistence.ShardRef }

	// Drain stops every shard actor gracefully (each finishes or, at the
	// deadline, cancels its batch) and, once all stopped, answers Drained
	// to its sender and calls Done. A later Drain with an earlier Deadline
	// brings the drain forward; the node serves nothing any more after the
	// first.
	Drain struct {
		Deadline time.Time
		// Done, if set, is called once the drain completed; it may be
		// called more than once (by a restarted actor) and must not block.
		Done func()
	}

	// Drained answers Drain.
	Drained struct{}

	// StatusRequest asks for a Status.
	StatusRequest struct{}

	// Unblocked tells that Config.Blocked may have changed its answers:
	// free permits go to the shards now allowed (and holders of a queue
	// now blocked yield when their batch ends).
	Unblocked struct{}
)

// Status describes the node's shards.
type Status struct {
	// Assigned counts the shards the node should serve; Serving those whose
	// actor holds the lease and reached the store on its last call.
	Assigned, Serving int
	// Shards are the reports of the shard actors, by shard.
	Shards []shard.Report
	// Waiting and Running count shards waiting for and holding a permit.
	Waiting, Running int
}

// Props returns the props of a node actor, supervising its shard actors
// with supervisor.Shards.
func Props(cfg Config) *actor.Props {
	if cfg.Concurrency <= 0 || cfg.HandoffTimeout <= 0 {
		panic(fmt.Sprintf("node: incomplete config (concurrency %d, handoff timeout %s)", cfg.Concurrency, cfg.HandoffTimeout))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	return actor.PropsFromProducer(func() actor.Actor { return newActor(cfg) },
		actor.WithSupervisor(supervisor.Shards()),
		actor.WithReceiverMiddleware(supervisor.LogPanics(cfg.Logger)))
}

type child struct {
	pid      *actor.PID
	report   shard.Report
	draining bool
}

// Actor is the node actor. Its fields are touched only by Receive.
type Actor struct {
	cfg     Config
	log     *slog.Logger
	want    map[persistence.ShardRef]shard.Config // assigned shards
	kids    map[persistence.ShardRef]*child
	byID    map[string]persistence.ShardRef // child PID id -> shard
	permits *permits
	renewer *shard.Renewer // renews the shards' leases; nil without Config.Store
	poller  *shard.Poller  // polls the idle shards; nil without Config.Store and IdlePoll

	stopping bool           // Stopping or Restarting arrived: spawn nothing more
	demand   map[string]int // last reported to Config.Demand
	drain    *Drain         // set once draining: the earliest deadline asked for
	drainTo  []*actor.PID   // who waits for Drained
	done     []func()       // Done functions of the Drains received
}

func newActor(cfg Config) *Actor {
	return &Actor{
		cfg:     cfg,
		log:     cfg.Logger,
		want:    map[persistence.ShardRef]shard.Config{},
		kids:    map[persistence.ShardRef]*child{},
		byID:    map[string]persistence.ShardRef{},
		permits: newPermits(cfg.Concurrency, cfg.Scheduler, cfg.Blocked),
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.onStarted(c)
	case *actor.Stopping, *actor.Restarting:
		// protoactor stops the shard actors (they release their leases);
		// this instance must not spawn them again as they terminate. A
		// stopping shard actor renews nothing any more and is polled no
		// more: the renewer and the poller stop.
		a.stopping = true
		if a.renewer != nil {
			// The loop returns as soon as its call sees the cancellation.
			if err := a.renewer.Stop(context.Background()); err != nil {
				a.log.Warn("lease renewer did not stop", "err", err)
			}
		}
		if a.poller != nil {
			if err := a.poller.Stop(context.Background()); err != nil {
				a.log.Warn("idle poller did not stop", "err", err)
			}
		}
	case *actor.Stopped:
	case Assign:
		a.onAssign(c, m)
	case Notice:
		if k := a.kids[m.Ref]; k != nil && !k.draining {
			c.Send(k.pid, shard.Wake{})
		}
	case shard.PermitRequest:
		if a.permits.request(m.Ref, m.Since) {
			a.grant(c, m.Ref)
		}
	case Unblocked:
		for _, ref := range a.permits.grant() {
			a.grant(c, ref)
		}
	case shard.PermitReturn:
		a.onReturn(c, m)
	case shard.Report:
		if k := a.kids[m.Ref]; k != nil {
			k.report = m
		}
	case *actor.Terminated:
		a.onTerminated(c, m)
	case Drain:
		a.onDrain(c, m)
	case StatusRequest:
		c.Respond(a.status())
	default:
		a.log.Warn("node actor ignores an unknown message", "type", fmt.Sprintf("%T", m))
	}
	a.reportDemand()
}

// reportDemand tells Config.Demand the shards holding or waiting for a
// permit, per queue, when they changed.
func (a *Actor) reportDemand() {
	if a.cfg.Demand == nil {
		return
	}
	d := a.permits.demand()
	same := len(d) == len(a.demand)
	for q, n := range d {
		if a.demand[q] != n {
			same = false
		}
	}
	if same {
		return
	}
	out := make(map[string]int, len(d)+len(a.demand))
	for q := range a.demand {
		out[q] = 0
	}
	for q, n := range d {
		out[q] = n
	}
	a.demand = d
	a.cfg.Demand(out)
}

// onStarted restores what the facade wants served: after a restart the old
// instance's shard actors are gone, and no change of placement may come to
// re-send the assignment.
func (a *Actor) onStarted(c actor.Context) {
	if a.cfg.Store != nil {
		a.renewer = shard.NewRenewer(a.cfg.Store, a.cfg.LeaseTTL, a.cfg.Clock, a.log)
		a.renewer.Start()
		if a.cfg.IdlePoll > 0 {
			a.poller = shard.NewPoller(a.cfg.Store, a.cfg.IdlePoll, a.cfg.Clock, a.log)
			a.poller.Start()
		}
	}
	if a.cfg.Restore == nil {
		return
	}
	assign, drain := a.cfg.Restore()
	if drain != nil {
		a.onDrain(c, *drain)
		return
	}
	if len(assign.Shards) > 0 {
		a.log.Info("node actor started: serving the assigned shards", "shards", len(assign.Shards))
		a.onAssign(c, assign)
	}
}

func (a *Actor) grant(c actor.Context, ref persistence.ShardRef) {
	if k := a.kids[ref]; k != nil {
		c.Send(k.pid, shard.PermitGranted{})
		return
	}
	a.permits.release(ref)
}

func (a *Actor) onReturn(c actor.Context, m shard.PermitReturn) {
	if m.Again {
		k := a.kids[m.Ref]
		if k == nil {
			a.permits.release(m.Ref)
		} else if a.permits.keep(m.Ref, m.Since) {
			c.Send(k.pid, shard.PermitGranted{})
		} else {
			c.Send(k.pid, shard.PermitWait{})
		}
	} else {
		a.permits.release(m.Ref)
	}
	for _, ref := range a.permits.grant() {
		a.grant(c, ref)
	}
}

func (a *Actor) onAssign(c actor.Context, m Assign) {
	if a.drain != nil {
		return
	}
	a.want = make(map[persistence.ShardRef]shard.Config, len(m.Shards))
	for _, sc := range m.Shards {
		a.want[sc.Ref] = sc
	}
	a.reconcile(c)
}

// reconcile spawns the assigned shards that have no actor and drains the
// actors of shards no longer assigned.
func (a *Actor) reconcile(c actor.Context) {
	for ref, k := range a.kids {
		if _, ok := a.want[ref]; !ok && !k.draining {
			k.draining = true
			c.Send(k.pid, shard.Drain{Deadline: a.cfg.Clock.Now().Add(a.cfg.HandoffTimeout)})
		}
	}
	refs := make([]persistence.ShardRef, 0, len(a.want))
	for ref := range a.want {
		if a.kids[ref] == nil {
			refs = append(refs, ref)
		}
	}
	slices.SortFunc(refs, persistence.ShardRef.Compare)
	for _, ref := range refs {
		sc := a.want[ref]
		if a.renewer != nil {
			sc.Renewer = a.renewer
		}
		if a.poller != nil {
			sc.Poller = a.poller
		}
		pid, err := c.SpawnNamed(shard.Props(sc), ref.String())
		if err != nil {
			a.log.Error("cannot spawn shard actor", "queue", ref.Queue, "shard", ref.Shard, "err", err)
			continue
		}
		a.kids[ref] = &child{pid: pid}
		a.byID[pid.Id] = ref
	}
}

func (a *Actor) onTerminated(c actor.Context, m *actor.Terminated) {
	ref, ok := a.byID[m.Who.Id]
	if !ok {
		return
	}
	delete(a.byID, m.Who.Id)
	delete(a.kids, ref)
	if a.stopping {
		return
	}
	a.permits.release(ref)
	for _, r := range a.permits.grant() {
		a.grant(c, r)
	}
	if a.drain != nil {
		a.drained(c)
		return
	}
	a.reconcile(c)
}

// onDrain drains every shard actor, or brings a running drain's deadline
// forward (the shard actors lower their own).
func (a *Actor) onDrain(c actor.Context, m Drain) {
	if c.Sender() != nil {
		a.drainTo = append(a.drainTo, c.Sender())
	}
	if m.Done != nil {
		a.done = append(a.done, m.Done)
	}
	if a.drain == nil || m.Deadline.Before(a.drain.Deadline) {
		a.drain = &Drain{Deadline: m.Deadline}
		a.want = map[persistence.ShardRef]shard.Config{}
		for _, k := range a.kids {
			k.draining = true
			c.Send(k.pid, shard.Drain{Deadline: m.Deadline})
		}
	}
	a.drained(c)
}

// drained answers the drains once every shard actor is gone.
func (a *Actor) drained(c actor.Context) {
	if len(a.kids) > 0 {
		return
	}
	for _, to := range a.drainTo {
		c.Send(to, Drained{})
	}
	for _, done := range a.done {
		done()
	}
	a.drainTo, a.done = nil, nil
}

func (a *Actor) status() Status {
	s := Status{Assigned: len(a.want), Running: len(a.permits.holders), Waiting: len(a.permits.waiters)}
	for ref := range a.want {
		k := a.kids[ref]
		if k == nil {
			s.Shards = append(s.Shards, shard.Report{Ref: ref, Err: "not started"})
			continue
		}
		if k.report.Serving {
			s.Serving++
		}
		r := k.report
		r.Ref = ref
		s.Shards = append(s.Shards, r)
	}
	slices.SortFunc(s.Shards, func(x, y shard.Report) int { return x.Ref.Compare(y.Ref) })
	return s
}
