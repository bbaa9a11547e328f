package engine

import (
	"context"
	"time"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// warmTimeout bounds the warm-up of the store's connections.
const warmTimeout = 5 * time.Second

// bootstrap finishes starting once the store is reachable, in this order:
// register the queues (if Start could not), open the store's connections,
// subscribe to enqueue notices, read the queue controls and give them to
// the node actor, start the services, assign the shards (a single node) or
// start the cluster service (which does); then it forwards notices until
// the stop closes the subscription. Each step that needs the store retries
// with backoff until ctx ends.
func (e *Engine) bootstrap(ctx context.Context, registered bool) {
	defer e.boot.Done()
	retry := newBackoff(e.clock)
	for !registered {
		err := e.register(ctx)
		if err == nil {
			break
		}
		e.log.Warn("cannot register queues yet; retrying", "err", err)
		if !retry.wait(ctx) {
			return
		}
	}
	e.warm(ctx)
	var sub persistence.Subscription
	for {
		var err error
		sub, err = e.store.Subscribe(ctx, e.queueNames()...)
		if err == nil {
			break
		}
		e.log.Warn("cannot subscribe to enqueue notices yet; retrying", "err", err)
		if !retry.wait(ctx) {
			return
		}
	}
	// A paused queue stays paused across restarts: the node actor has the
	// controls before it serves anything.
	for {
		paused, err := e.controls.read(ctx)
		if err == nil {
			e.tellNodeActor(node.Controls{Paused: paused})
			break
		}
		e.log.Warn("cannot read the queue controls yet; retrying", "err", err)
		if !retry.wait(ctx) {
			sub.Close()
			return
		}
	}
	if !e.serve(ctx, sub) {
		sub.Close()
		return
	}
	e.forward(sub)
}

// serve starts the services and assigns the shards; false when the stop
// ran meanwhile (it did not see the subscription).
func (e *Engine) serve(ctx context.Context, sub persistence.Subscription) bool {
	e.mu.Lock()
	if ctx.Err() != nil {
		e.mu.Unlock()
		return false
	}
	e.sub, e.ready = sub, true
	e.controls.Start(e.tellNodeActor)
	e.periodic.Start()
	e.shapesW.Start(e.shapesChanged, e.wakeShards)
	service := e.service
	if service == nil {
		e.assignLocked(e.allShards(), nil)
	}
	e.mu.Unlock()
	if service != nil {
		if err := service.Start(ctx); err != nil {
			e.log.Warn("cluster service did not start", "err", err)
		}
	}
	return true
}

// forward hands the store's notices to the node actor (a controls notice
// to the control watcher, a cancel notice from a goroutine of its own)
// until the subscription is closed.
func (e *Engine) forward(sub persistence.Subscription) {
	e.mu.Lock()
	sys, pid := e.sys, e.nodePID
	e.mu.Unlock()
	if cs, ok := sub.(persistence.CancelSubscription); ok {
		go func() {
			for n := range cs.Cancels() {
				sys.Root.Send(pid, node.Cancel{Notice: n})
			}
		}()
	}
	for ref := range sub.C() {
		if ref.Shard == persistence.ControlsNotice {
			e.controls.Refresh()
			e.shapesW.Refresh()
			continue
		}
		sys.Root.Send(pid, node.Notice{Ref: ref})
	}
}

// tellNodeActor sends msg to the node actor while the node runs.
func (e *Engine) tellNodeActor(msg any) {
	e.mu.Lock()
	sys, pid, running := e.sys, e.nodePID, e.state == stateRunning
	e.mu.Unlock()
	if running {
		sys.Root.Send(pid, msg)
	}
}

// warm opens the store's connections before the node serves shards, so
// that a lease call does not wait for a new connection's handshake: two
// per shard of the node's queues (a shard's own call and its renewal) and
// a few for the rest, as far as the store's pool allows.
func (e *Engine) warm(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	e.mu.Lock()
	shards := len(e.allShards())
	e.mu.Unlock()
	if err := e.store.Warm(ctx, 2*shards+4); err != nil {
		e.log.Debug("cannot open the store's connections ahead of use", "err", err)
	}
}

// backoff waits between the attempts of a step that needs the store: 100 ms,
// doubling up to 2 s.
type backoff struct {
	clock clock.Clock
	next  time.Duration
}

func newBackoff(clk clock.Clock) *backoff { return &backoff{clock: clk, next: 100 * time.Millisecond} }

// wait waits for the next attempt; false when ctx ended.
func (b *backoff) wait(ctx context.Context) bool {
	if clock.Sleep(ctx, b.clock, b.next) != nil {
		return false
	}
	b.next = min(b.next*2, 2*time.Second)
	return true
}
