package orderly

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/internal/clock"
)

// Queue controls (docs/contract.md §9): the node reads every queue's
// control hash in one round trip per ControlPoll and tells its node actor
// and shard actors, which start no handler call of a paused queue.

// ControlPoll is how often a node reads the queue-wide controls (pause)
// from the store. A change is seen at once by every node through the
// store's controls notice (persistence.ControlsNotice); the poll catches
// a notice that was missed.
const ControlPoll = time.Second

// queueControls is the node's last view of its queues' controls. The
// watcher writes it; the node actor and the shard actors' handler tasks read
// it before every permit and every call.
type queueControls struct {
	paused map[string]*atomic.Bool // fixed at NewNode: one per queue
	poke   chan struct{}           // ask the watcher for a read now (buffered 1)

	// max_concurrency: for each limited queue, its limit, the permits this
	// node holds in the store (0 while it cannot renew them) and how many
	// of its shards hold or wait for a node permit (the node actor's
	// demand).
	limit       map[string]int
	held        map[string]*atomic.Int64
	demand      map[string]*atomic.Int64
	permitsPoke chan struct{} // ask the permit keeper to set the permits now (buffered 1)
}

func newQueueControls(workers []Worker) *queueControls {
	c := &queueControls{paused: make(map[string]*atomic.Bool, len(workers)), poke: make(chan struct{}, 1),
		limit: map[string]int{}, held: map[string]*atomic.Int64{}, demand: map[string]*atomic.Int64{},
		permitsPoke: make(chan struct{}, 1)}
	for _, w := range workers {
		c.paused[w.Queue] = &atomic.Bool{}
		if w.MaxConcurrency > 0 {
			c.limit[w.Queue] = w.MaxConcurrency
			c.held[w.Queue] = &atomic.Int64{}
			c.demand[w.Queue] = &atomic.Int64{}
		}
	}
	return c
}

// blocked is the node actor's Config.Blocked: a paused queue starts
// nothing, and a limited queue runs at most as many batches on this node
// as the node holds cluster-wide permits.
func (c *queueControls) blocked(queue string, others int) bool {
	if c.isPaused(queue) {
		return true
	}
	if h := c.held[queue]; h != nil {
		return int64(others) >= h.Load()
	}
	return false
}

// setDemand is the node actor's Config.Demand: a limited queue whose demand
// grew (or fell to 0) gets its permits set at once.
func (c *queueControls) setDemand(d map[string]int) {
	for q, n := range d {
		if a := c.demand[q]; a != nil {
			if old := a.Swap(int64(n)); int64(n) > old || (n == 0 && old > 0) {
				select {
				case c.permitsPoke <- struct{}{}:
				default:
				}
			}
		}
	}
}

// isPaused reports whether the queue is paused, as last read.
func (c *queueControls) isPaused(queue string) bool {
	p := c.paused[queue]
	return p != nil && p.Load()
}

// pausedFunc returns isPaused bound to one queue, for a shard actor.
func (c *queueControls) pausedFunc(queue string) func() bool {
	p := c.paused[queue]
	if p == nil {
		return nil
	}
	return p.Load
}

// refresh asks the watcher to read the controls at once.
func (c *queueControls) refresh() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// readControls reads the controls of the node's queues and reports whether
// any changed.
func (n *Node) readControls(ctx context.Context) (bool, error) {
	queues := n.Queues()
	if len(queues) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, max(n.cfg.LeaseTTL, 5*time.Second))
	defer cancel()
	ctl, err := n.store.Controls(ctx, queues...)
	if err != nil {
		return false, err
	}
	changed := false
	for i, q := range queues {
		if old := n.ctl.paused[q].Swap(ctl[i].Paused); old != ctl[i].Paused {
			changed = true
			if ctl[i].Paused {
				n.log.Info("queue paused: no new handler call starts", "queue", q)
			} else {
				n.log.Info("queue resumed", "queue", q)
			}
		}
	}
	return changed, nil
}

// watchControls reads the controls every ControlPoll (or when poked: a
// change through this node or a controls notice) until
// ctx ends, and tells the node actor when a queue is resumed or paused.
func (n *Node) watchControls(ctx context.Context) {
	defer n.boot.Done()
	failed := 0
	for {
		tick, stop := clock.After(n.clock, n.controlPoll)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-n.ctl.poke:
			stop()
		case <-tick:
		}
		changed, err := n.readControls(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if failed++; failed == 1 || failed%60 == 0 {
				n.log.Warn("cannot read the queue controls; keeping the last view", "err", err, "attempt", failed)
			}
			continue
		}
		failed = 0
		if changed {
			n.unblocked()
		}
	}
}

// PauseQueue pauses the queue cluster-wide (docs/contract.md §9): it keeps
// accepting enqueues, no node starts a new handler call of it, and calls
// already running finish. The state is kept in the store, so it survives
// restarts; every node sees it at once through the store's notice, and
// within ControlPoll when it missed the notice. Any
// queue registered in the store can be paused, served by this node or not;
// persistence.ErrUnknownQueue otherwise.
func (n *Node) PauseQueue(ctx context.Context, queue string) error {
	return n.setPaused(ctx, queue, true)
}

// ResumeQueue undoes PauseQueue.
func (n *Node) ResumeQueue(ctx context.Context, queue string) error {
	return n.setPaused(ctx, queue, false)
}

func (n *Node) setPaused(ctx context.Context, queue string, paused bool) error {
	if err := n.store.SetPaused(ctx, queue, paused); err != nil {
		return fmt.Errorf("orderly: set paused of %s: %w", queue, err)
	}
	if p := n.ctl.paused[queue]; p != nil && p.Swap(paused) != paused {
		n.unblocked()
	}
	n.ctl.refresh()
	return nil
}

// unblocked tells the node actor that the controls changed.
func (n *Node) unblocked() {
	n.mu.Lock()
	sys, pid, running := n.sys, n.nodePID, n.state == stateRunning
	n.mu.Unlock()
	if running {
		sys.Root.Send(pid, node.Unblocked{})
	}
}

// QueuePaused reports whether the node holds the queue as paused, as it
// last read the store (at once after a controls notice, at most
// ControlPoll ago while the store answers).
// It is false for a queue the node does not serve.
func (n *Node) QueuePaused(queue string) bool { return n.ctl.isPaused(queue) }

// keepPermits holds this node's share of the max_concurrency permits of its
// limited queues (docs/contract.md §9): every LeaseTTL/3, and at once when
// a queue's demand grows, it sets each queue's permits to its demand (at
// most the limit) in one script call on the queue's slot, renewing those
// it keeps for LeaseTTL. A node that cannot renew counts its permits as
// gone once LeaseTTL minus a margin passed since the last renewal; a dead
// node's expire in the store within LeaseTTL. On stop it releases them.
func (n *Node) keepPermits(ctx context.Context) {
	defer n.boot.Done()
	holder := n.permitHolder
	ttl := n.cfg.LeaseTTL
	every := ttl / 3
	queues := make([]string, 0, len(n.ctl.limit))
	for q := range n.ctl.limit {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	lastOK := map[string]time.Time{}
	set := func(ctx context.Context, q string, want int) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, max(ttl, 5*time.Second))
		defer cancel()
		return n.store.SetPermits(ctx, q, holder, want, n.ctl.limit[q], ttl)
	}
	failed := 0
	for {
		changed := false
		for _, q := range queues {
			want := min(int(n.ctl.demand[q].Load()), n.ctl.limit[q])
			sent := n.clock.Now()
			got, err := set(ctx, q, want)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				if failed++; failed == 1 || failed%60 == 0 {
					n.log.Warn("cannot renew the max_concurrency permits", "queue", q, "err", err, "attempt", failed)
				}
				if t, ok := lastOK[q]; !ok || !n.clock.Now().Before(t.Add(ttl-ttl/4)) {
					n.ctl.held[q].Store(0)
				}
				continue
			}
			failed = 0
			lastOK[q] = sent
			if old := n.ctl.held[q].Swap(int64(got)); int64(got) > old {
				changed = true
			}
		}
		if changed {
			n.unblocked()
		}
		tick, stop := clock.After(n.clock, every)
		select {
		case <-ctx.Done():
			stop()
			// The shards drained before ctx ended: give the permits
			// back so that other nodes need not wait for them to expire.
			for _, q := range queues {
				n.ctl.held[q].Store(0)
				rctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if _, err := set(rctx, q, 0); err != nil {
					n.log.Warn("cannot release the max_concurrency permits; they expire by themselves", "queue", q, "err", err)
				}
				cancel()
			}
			return
		case <-n.ctl.permitsPoke:
			stop()
		case <-tick:
		}
	}
}

// throttle returns the shard actors' Config.Throttle for a worker with a
// rate limit: each handler call takes one token from the queue's bucket in
// the store, waiting for the next when there is none. A store error is
// retried with backoff (the call does not start without a token).
func (n *Node) throttle(w Worker) func(ctx context.Context) error {
	r := w.RateLimit
	if r == nil {
		return nil
	}
	return func(ctx context.Context) error {
		backoff := 50 * time.Millisecond
		for {
			tctx, cancel := context.WithTimeout(ctx, max(n.cfg.LeaseTTL, 5*time.Second))
			got, wait, err := n.store.TakeTokens(tctx, w.Queue, 1, r.PerSecond, r.Burst)
			cancel()
			switch {
			case err != nil:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				n.log.Warn("cannot take a rate_limit token; retrying", "queue", w.Queue, "err", err)
				wait, backoff = backoff, min(backoff*2, time.Second)
			case got > 0:
				return nil
			}
			if err := clock.Sleep(ctx, n.clock, max(wait, time.Millisecond)); err != nil {
				return err
			}
		}
	}
}
