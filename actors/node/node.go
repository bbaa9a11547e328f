// Package node implements the node actor, which owns this node's shard
// actors (it is their supervisor), grants the node-wide concurrency limit to
// them, holds the queue controls (pause, max_concurrency) and tells its
// shards, forwards enqueue notices, tracks readiness and runs the graceful
// drain; and the enqueue actor, the well-known actor every node runs to
// accept Enqueue messages.
//
// This package is the node's machinery, not a programming interface: its
// exported names serve the node runtime (internal/engine) and may change in
// any release. Programs use the root package orderly.
//
// The set of shards a node serves is given by Assign: all shards of its
// queues on a single node, the node's share under the cluster's placement.
// Assign reconciles: shards no longer assigned drain (finish or cancel their
// batch within the handoff timeout, settle, release the lease) and stop; new
// ones are spawned once a previous actor of the same shard is gone.
//
// Control state is actor state. The queue controls arrive as messages
// (Controls: which queues are paused, read from the store by the node's
// control watcher); the node's share of each limited queue's cluster-wide
// max_concurrency comes from the actor's own permit keeper (permitkeeper.go),
// which it tells its demand and which answers with the permits it holds.
// The actor keeps both as plain fields, grants permits by them and tells
// its shard actors when their queue is paused or resumed (shard.Pause).
//
// A node actor that starts again after a restart by its guardian (its shard
// actors were stopped with the old instance) finds the last Assign,
// Controls and Drain its previous instance received in the memory the
// props share between instances, and serves again at once.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Config configures the node actor. Concurrency and HandoffTimeout are
// required (the node runtime passes orderly's defaults).
type Config struct {
	// Concurrency is how many batches may run at once on the node.
	Concurrency int
	Scheduler   Scheduler
	// HandoffTimeout bounds the drain of a shard that moves to another node.
	HandoffTimeout time.Duration
	// Clock dates handoff deadlines and times the permit keeper
	// [clock.Real()].
	Clock  clock.Clock
	Logger *slog.Logger
	// Store, if set, makes the actor renew its shards' leases together:
	// it runs a shard.Renewer of LeaseTTL (the shards' LeaseTTL) on Store
	// from its start to its stop, one round trip per LeaseTTL/3 for all of
	// them. Nil: each shard actor renews its own lease.
	Store    persistence.NodeStore
	LeaseTTL time.Duration
	// IdlePoll, with Store, makes the actor poll its idle shards together:
	// it runs a shard.Poller of that interval (the shards' IdlePoll) on
	// Store from its start to its stop, one round trip per IdlePoll for all
	// of them. 0: each idle shard actor polls on its own.
	IdlePoll time.Duration
	// Limits are the max_concurrency of the limited queues
	// (docs/contract.md §9): with Store, the actor runs a permit keeper
	// that holds this node's share of each in the store under
	// PermitHolder, and runs at most that many batches of the queue at
	// once. Nil or empty: no queue is limited.
	Limits       map[string]int
	PermitHolder string
	// Weights are the queues' weights for SchedulerWeighted and
	// SchedulerStrict (1 for a queue absent); the other schedulers ignore
	// them.
	Weights map[string]int
}

// Messages the node actor accepts.
type (
	// Assign sets the shards the node serves, with each shard actor's
	// configuration.
	Assign struct{ Shards []shard.Config }

	// Notice wakes the actor of a shard (jobs were enqueued into it).
	Notice struct{ Ref persistence.ShardRef }

	// Cancel asks the actor of a shard, if this node runs it, to cancel the
	// handler call holding an id (docs/contract.md §3.13).
	Cancel struct{ Notice persistence.CancelNotice }

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

	// Controls are the queue controls as the control watcher last read
	// them: which of the node's queues are paused (docs/contract.md §9).
	// Queues not named are not paused. The actor tells the shard actors
	// of a queue whose pause changed, and grants permits by it.
	Controls struct{ Paused map[string]bool }

	// SetPause pauses or resumes one queue on this node at once, after a
	// change made through this node. Sent as a request, it is answered
	// with PauseApplied once every shard actor of the queue has taken it:
	// from then on, no shard of the node starts a call of a paused queue.
	SetPause struct {
		Queue  string
		Paused bool
	}

	// PauseApplied answers SetPause.
	PauseApplied struct{}
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
// with supervisor.Shards. The instances these props produce share one
// memory: an instance started after a restart serves what its previous
// instance was told.
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
	mem := &memory{}
	return actor.PropsFromProducer(func() actor.Actor { return newActor(cfg, mem) },
		actor.WithSupervisor(supervisor.Shards()),
		actor.WithReceiverMiddleware(supervisor.LogPanics(cfg.Logger)))
}

// memory is what a node actor leaves to the instance that replaces it
// after a restart: the last Assign, Controls and Drain it received. Only
// the actor's instances touch it, one after the other, each from its own
// Receive.
type memory struct {
	mu       sync.Mutex // guards the fields below
	assign   Assign
	controls map[string]bool
	drain    *Drain // the earliest deadline asked for, nil before a Drain
	done     []func()
}

func (m *memory) setAssign(a Assign) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.assign = a
}

func (m *memory) setControls(paused map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.controls = paused
}

func (m *memory) addDrain(d Drain) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d.Done != nil {
		m.done = append(m.done, d.Done)
	}
	if m.drain == nil || d.Deadline.Before(m.drain.Deadline) {
		m.drain = &Drain{Deadline: d.Deadline}
	}
}

// recall returns what a starting instance must restore.
func (m *memory) recall() (Assign, map[string]bool, *Drain) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drain == nil {
		return m.assign, m.controls, nil
	}
	d := &Drain{Deadline: m.drain.Deadline}
	done := slices.Clone(m.done)
	d.Done = func() {
		for _, f := range done {
			f()
		}
	}
	return m.assign, m.controls, d
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
	mem     *memory
	want    map[persistence.ShardRef]shard.Config // assigned shards
	kids    map[persistence.ShardRef]*child
	byID    map[string]persistence.ShardRef // child PID id -> shard
	permits *permits
	renewer *shard.Renewer // renews the shards' leases; nil without Config.Store
	poller  *shard.Poller  // polls the idle shards; nil without Config.Store and IdlePoll
	keeper  *permitKeeper  // holds the permits of the limited queues; nil without Config.Limits

	pauses   []*pauseWait // SetPause requests waiting for their shard actors
	stopping bool         // Stopping or Restarting arrived: spawn nothing more
	drain    *Drain       // set once draining: the earliest deadline asked for
	drainTo  []*actor.PID // who waits for Drained
	done     []func()     // Done functions of the Drains received
}

func newActor(cfg Config, mem *memory) *Actor {
	return &Actor{
		cfg:     cfg,
		log:     cfg.Logger,
		mem:     mem,
		want:    map[persistence.ShardRef]shard.Config{},
		kids:    map[persistence.ShardRef]*child{},
		byID:    map[string]persistence.ShardRef{},
		permits: newPermits(cfg.Concurrency, cfg.Scheduler, cfg.Limits, cfg.Weights),
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.onStarted(c)
	case *actor.Stopping, *actor.Restarting:
		a.onStopping()
	case *actor.Stopped:
	case Assign:
		a.mem.setAssign(m)
		a.onAssign(c, m)
	case Notice:
		if k := a.kids[m.Ref]; k != nil && !k.draining {
			c.Send(k.pid, shard.Wake{})
		}
	case Cancel:
		if k := a.kids[m.Notice.ShardRef]; k != nil {
			c.Send(k.pid, shard.Cancel{ID: m.Notice.ID})
		}
	case Controls:
		a.mem.setControls(m.Paused)
		a.onControls(c, m.Paused)
	case SetPause:
		a.onSetPause(c, m)
	case shard.PauseApplied:
		a.pauseApplied(c, c.Sender())
	case permitsHeld:
		if a.permits.setHeld(m.held) {
			a.grantWaiting(c)
		}
	case shard.PermitRequest:
		if a.permits.request(m.Ref, m.Since) {
			a.grant(c, m.Ref)
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
		a.mem.addDrain(m)
		a.onDrain(c, m)
	case StatusRequest:
		c.Respond(a.status())
	default:
		a.log.Warn("node actor ignores an unknown message", "type", fmt.Sprintf("%T", m))
	}
	if a.keeper != nil {
		a.keeper.setDemand(a.permits.demand())
	}
}

// onStarted starts the loops the actor owns and restores what its previous
// instance served: after a restart the old instance's shard actors are
// gone, and no change of placement may come to send the assignment again.
func (a *Actor) onStarted(c actor.Context) {
	if a.cfg.Store != nil {
		a.renewer = shard.NewRenewer(a.cfg.Store, a.cfg.LeaseTTL, a.cfg.Clock, a.log)
		a.renewer.Start()
		if a.cfg.IdlePoll > 0 {
			a.poller = shard.NewPoller(a.cfg.Store, a.cfg.IdlePoll, a.cfg.Clock, a.log)
			a.poller.Start()
		}
		if len(a.cfg.Limits) > 0 {
			self, root := c.Self(), c.ActorSystem().Root
			a.keeper = newPermitKeeper(a.cfg, func(m permitsHeld) { root.Send(self, m) })
			a.keeper.start()
		}
	}
	assign, paused, drain := a.mem.recall()
	a.permits.paused = paused
	if drain != nil {
		a.onDrain(c, *drain)
		return
	}
	if len(assign.Shards) > 0 {
		a.log.Info("node actor started: serving the assigned shards", "shards", len(assign.Shards))
		a.onAssign(c, assign)
	}
}

// onStopping runs on Stopping and Restarting: protoactor stops the shard
// actors (they release their leases); this instance must not spawn them
// again as they terminate. A stopping shard actor renews nothing any more
// and is polled no more: the renewer and the poller stop, and the keeper
// gives the node's permits back.
func (a *Actor) onStopping() {
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
	if a.keeper != nil {
		a.keeper.stop()
		a.keeper = nil
	}
}

// onControls takes the queues' pause as the control watcher read it: the
// shard actors of a queue whose pause changed are told, and permits go to
// the shards now allowed (holders of a queue now paused yield when their
// batch ends).
func (a *Actor) onControls(c actor.Context, paused map[string]bool) {
	old := a.permits.paused
	a.permits.paused = paused
	for ref, k := range a.kids {
		if p := paused[ref.Queue]; p != old[ref.Queue] {
			c.Send(k.pid, shard.Pause{Paused: p})
		}
	}
	a.grantWaiting(c)
}

// pauseWait is a SetPause request waiting for the shard actors it told.
type pauseWait struct {
	to   *actor.PID      // the requester
	kids map[string]bool // PID ids of the shard actors that did not answer yet
}

// onSetPause takes one queue's pause at once and tells every shard actor
// of the queue, as a request; the requester is answered once they all
// have answered (or stopped). Every shard actor is told, changed or not,
// so that its answer also covers an earlier Pause still in its mailbox.
func (a *Actor) onSetPause(c actor.Context, m SetPause) {
	paused := maps.Clone(a.permits.paused)
	if paused == nil {
		paused = map[string]bool{}
	}
	paused[m.Queue] = m.Paused
	a.permits.paused = paused
	a.mem.setControls(paused)
	w := &pauseWait{to: c.Sender(), kids: map[string]bool{}}
	for ref, k := range a.kids {
		if ref.Queue == m.Queue {
			c.Request(k.pid, shard.Pause{Paused: m.Paused})
			w.kids[k.pid.Id] = true
		}
	}
	a.grantWaiting(c)
	if w.to == nil {
		return
	}
	if len(w.kids) == 0 {
		c.Send(w.to, PauseApplied{})
		return
	}
	a.pauses = append(a.pauses, w)
}

// pauseApplied records that the shard actor kid took a pause (or is
// gone), and answers the SetPause requests it completes.
func (a *Actor) pauseApplied(c actor.Context, kid *actor.PID) {
	if kid == nil {
		return
	}
	a.pauses = slices.DeleteFunc(a.pauses, func(w *pauseWait) bool {
		delete(w.kids, kid.Id)
		if len(w.kids) > 0 {
			return false
		}
		c.Send(w.to, PauseApplied{})
		return true
	})
}

// grantWaiting hands free permits to the waiting shards now allowed.
func (a *Actor) grantWaiting(c actor.Context) {
	for _, ref := range a.permits.grant() {
		a.grant(c, ref)
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
	a.grantWaiting(c)
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
		sc.Paused = a.permits.paused[ref.Queue]
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
	a.pauseApplied(c, m.Who)
	if a.stopping {
		return
	}
	a.permits.release(ref)
	a.grantWaiting(c)
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
