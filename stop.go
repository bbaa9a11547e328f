package orderly

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
)

// stopGrace is how long Stop and StopAndCancel still wait, once their
// context has ended, for the running handlers they then cancel to return
// and for the node to finish stopping (settle, release leases, leave the
// cluster).
const stopGrace = 2 * time.Second

// stopRun is a node's one stop: every Stop and StopAndCancel call joins it
// and waits on the same done channel (river's shape).
type stopRun struct {
	done     chan struct{} // closed once the node has stopped
	err      error         // the stop's outcome; written before done closes
	drained  chan struct{} // closed once every shard actor has stopped
	lowered  chan struct{} // signals the stop goroutine that the deadline moved
	deadline time.Time     // guarded by Node.mu; only ever moves earlier
	once     sync.Once     // closes drained
	wg       sync.WaitGroup
}

// drainMessage returns the Drain the node actor must run. Called with
// Node.mu held.
func (s *stopRun) drainMessage() *node.Drain {
	return &node.Drain{Deadline: s.deadline, Done: func() { s.once.Do(func() { close(s.drained) }) }}
}

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
func (n *Node) Stop(ctx context.Context) error {
	deadline := n.clock.Now().Add(n.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok {
		if at := n.clock.Now().Add(time.Until(d)); at.Before(deadline) {
			deadline = at
		}
	}
	return n.stopBy(ctx, deadline)
}

// StopAndCancel stops the node at once: running handlers are cancelled
// (their batches go back to the queue unchanged and are delivered again),
// leases released. Called while a Stop runs, it cuts that stop short (a
// second SIGTERM); either call returns once the node has stopped. ctx bounds
// the wait as for Stop.
func (n *Node) StopAndCancel(ctx context.Context) error {
	return n.stopBy(ctx, n.clock.Now())
}

func (n *Node) stopBy(ctx context.Context, deadline time.Time) error {
	s := n.beginStop(deadline)
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		s.wg.Wait()
		return s.err
	case <-ctx.Done():
	}
	n.beginStop(n.clock.Now()) // ctx ended: cut what still runs
	grace, stop := clock.After(n.clock, stopGrace)
	defer stop()
	select {
	case <-s.done:
		s.wg.Wait()
		return s.err
	case <-grace:
		return fmt.Errorf("orderly: the node is still stopping %s after the stop was cut short: %w", stopGrace, ctx.Err())
	}
}

// beginStop starts the node's stop with the given deadline, or brings the
// deadline of the running stop forward. It returns nil on a node that never
// started.
func (n *Node) beginStop(deadline time.Time) *stopRun {
	n.life.Lock() // waits for a Start under way
	defer n.life.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.state == stateNew:
		return nil
	case n.stopping == nil:
		s := &stopRun{done: make(chan struct{}), drained: make(chan struct{}), lowered: make(chan struct{}, 1), deadline: deadline}
		n.stopping, n.state = s, stateStopping
		s.wg.Add(1)
		go n.runStop(s)
	case n.state == stateStopping && deadline.Before(n.stopping.deadline):
		s := n.stopping
		s.deadline = deadline
		n.log.Info("node stop brought forward: running handlers are cancelled at the new deadline", "deadline", clock.Until(n.clock, deadline).Round(time.Millisecond))
		n.sys.Root.Send(n.nodePID, *s.drainMessage())
		select {
		case s.lowered <- struct{}{}:
		default:
		}
	}
	return n.stopping
}

// runStop is the stop: shards first (each drains and releases its lease),
// then the notice forwarder, the cluster loops and membership, the remote,
// the actors that owned the shards, the actor system.
func (n *Node) runStop(s *stopRun) {
	defer s.wg.Done()
	n.mu.Lock()
	sys, nodePID, enqPID, keeperPID := n.sys, n.nodePID, n.enqPID, n.keeperPID
	members, service, rem := n.members, n.service, n.remote
	deadline := s.deadline
	n.mu.Unlock()

	n.log.Info("node stopping", "deadline", clock.Until(n.clock, deadline).Round(time.Millisecond))
	if members != nil {
		// Others start taking the shards over now; they acquire each one
		// as soon as it is released below.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Draining = true }); err != nil {
			n.log.Warn("cannot advertise draining", "err", err)
		}
		cancel()
	}
	n.mu.Lock()
	drain := s.drainMessage()
	n.mu.Unlock()
	sys.Root.Send(nodePID, *drain)
	var errs []error
	if err := n.waitDrained(s); err != nil {
		errs = append(errs, err)
	}

	n.cancel()
	n.mu.Lock()
	sub := n.sub
	n.mu.Unlock()
	if sub != nil {
		sub.Close()
	}
	n.boot.Wait()
	if service != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := service.Stop(ctx); err != nil {
			n.log.Warn("cluster loops did not stop", "err", err)
		}
		cancel()
	}
	if members != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := members.Leave(ctx); err != nil {
			n.log.Warn("leaving the cluster", "err", err)
		}
		cancel()
	}
	if rem != nil {
		rem.Shutdown(true)
	}
	for _, pid := range []*actor.PID{keeperPID, nodePID, enqPID} { // the keeper first: it would respawn the enqueue actor
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			n.log.Warn("actor did not stop in time", "actor", pid.Id, "err", err)
		}
	}
	sys.Shutdown()

	n.mu.Lock()
	n.state = stateStopped
	s.err = errors.Join(errs...)
	n.mu.Unlock()
	n.log.Info("node stopped")
	close(s.done)
}

// waitDrained waits until every shard actor has stopped, for at most the
// stop deadline (which may move earlier meanwhile) plus a LeaseTTL and the
// store call bound: a drain that takes longer has a handler that ignores
// its context.
func (n *Node) waitDrained(s *stopRun) error {
	for {
		n.mu.Lock()
		deadline := s.deadline
		n.mu.Unlock()
		limit, stop := clock.After(n.clock, max(clock.Until(n.clock, deadline), 0)+n.cfg.LeaseTTL+5*time.Second)
		select {
		case <-s.drained:
			stop()
			return nil
		case <-s.lowered:
			stop()
		case <-limit:
			return errors.New("orderly: shards did not stop in time (a handler may ignore its context)")
		}
	}
}
