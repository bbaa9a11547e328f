package engine

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
	deadline time.Time     // guarded by Engine.mu; only ever moves earlier
	once     sync.Once     // closes drained
	wg       sync.WaitGroup
}

// drainMessage returns the Drain the node actor must run. Called with
// Engine.mu held.
func (s *stopRun) drainMessage() node.Drain {
	return node.Drain{Deadline: s.deadline, Done: func() { s.once.Do(func() { close(s.drained) }) }}
}

// Stop stops the node gracefully; see orderly.Node.Stop.
func (e *Engine) Stop(ctx context.Context) error {
	deadline := e.clock.Now().Add(e.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok {
		// A context's deadline is on the system clock: what is left of
		// it is added to the node's clock.
		if at := e.clock.Now().Add(time.Until(d)); at.Before(deadline) {
			deadline = at
		}
	}
	return e.stopBy(ctx, deadline)
}

// StopAndCancel stops the node at once; see orderly.Node.StopAndCancel.
func (e *Engine) StopAndCancel(ctx context.Context) error {
	return e.stopBy(ctx, e.clock.Now())
}

func (e *Engine) stopBy(ctx context.Context, deadline time.Time) error {
	s := e.beginStop(deadline)
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		s.wg.Wait()
		return s.err
	case <-ctx.Done():
	}
	e.beginStop(e.clock.Now()) // ctx ended: cut what still runs
	grace, stop := clock.After(e.clock, stopGrace)
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
func (e *Engine) beginStop(deadline time.Time) *stopRun {
	e.life.Lock() // waits for a Start under way
	defer e.life.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.state == stateNew:
		return nil
	case e.stopping == nil:
		s := &stopRun{done: make(chan struct{}), drained: make(chan struct{}), lowered: make(chan struct{}, 1), deadline: deadline}
		e.stopping, e.state = s, stateStopping
		s.wg.Add(1)
		go e.runStop(s) // owned by the stop: every caller waits on s.done
	case e.state == stateStopping && deadline.Before(e.stopping.deadline):
		s := e.stopping
		s.deadline = deadline
		e.log.Info("node stop brought forward: running handlers are cancelled at the new deadline", "deadline", clock.Until(e.clock, deadline).Round(time.Millisecond))
		e.sys.Root.Send(e.nodePID, s.drainMessage())
		select {
		case s.lowered <- struct{}{}:
		default:
		}
	}
	return e.stopping
}

// runStop is the stop, in this order: the shards (each drains and releases
// its lease), the start goroutine and its notice forwarding, the services
// (periodic ticks, the control watcher, the cluster service), the
// membership, the actor remote, the actors that owned the shards, the actor
// system.
func (e *Engine) runStop(s *stopRun) {
	defer s.wg.Done()
	e.mu.Lock()
	sys, nodePID, enqPID, keeperPID := e.sys, e.nodePID, e.enqPID, e.keeperPID
	members, service, rem := e.members, e.service, e.remote
	deadline := s.deadline
	drain := s.drainMessage()
	e.mu.Unlock()

	e.log.Info("node stopping", "deadline", clock.Until(e.clock, deadline).Round(time.Millisecond))
	if members != nil {
		// Others start taking the shards over now; they acquire each one
		// as soon as it is released below.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := members.SetMeta(ctx, func(m *cluster.Meta) { m.Draining = true }); err != nil {
			e.log.Warn("cannot advertise draining", "err", err)
		}
		cancel()
	}
	sys.Root.Send(nodePID, drain)
	var errs []error
	if err := e.waitDrained(s); err != nil {
		errs = append(errs, err)
	}

	e.cancel()
	e.mu.Lock()
	sub := e.sub
	e.mu.Unlock()
	if sub != nil {
		sub.Close()
	}
	e.boot.Wait()
	e.stopServices(service)
	if members != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := members.Leave(ctx); err != nil {
			e.log.Warn("leaving the cluster", "err", err)
		}
		cancel()
	}
	if rem != nil {
		rem.Shutdown(true)
	}
	for _, pid := range []*actor.PID{keeperPID, nodePID, enqPID} { // the keeper first: it would respawn the enqueue actor
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			e.log.Warn("actor did not stop in time", "actor", pid.Id, "err", err)
		}
	}
	sys.Shutdown()

	e.mu.Lock()
	e.state = stateStopped
	s.err = errors.Join(errs...)
	e.mu.Unlock()
	e.log.Info("node stopped")
	close(s.done)
}

// stopServices stops the engine's services, in the reverse of their start
// order; each is given 5 s (its step in flight is bounded).
func (e *Engine) stopServices(service *cluster.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.shapesW.Stop(ctx); err != nil {
		e.log.Warn("shape watcher did not stop in time", "err", err)
	}
	if err := e.periodic.Stop(ctx); err != nil {
		e.log.Warn("periodic jobs did not stop", "err", err)
	}
	if err := e.controls.Stop(ctx); err != nil {
		e.log.Warn("control watcher did not stop", "err", err)
	}
	if service != nil {
		if err := service.Stop(ctx); err != nil {
			e.log.Warn("cluster loops did not stop", "err", err)
		}
	}
}

// waitDrained waits until every shard actor has stopped, for at most the
// stop deadline (which may move earlier meanwhile) plus a LeaseTTL and the
// store call bound: a drain that takes longer has a handler that ignores
// its context.
func (e *Engine) waitDrained(s *stopRun) error {
	for {
		e.mu.Lock()
		deadline := s.deadline
		e.mu.Unlock()
		limit, stop := clock.After(e.clock, max(clock.Until(e.clock, deadline), 0)+e.cfg.LeaseTTL+5*time.Second)
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
