package shard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Poller polls a node's idle shards together: every interval (the node's
// IdlePoll) it asks the store, in one Store.PollShards call (one round trip,
// or one per server of a clustered store), which of the shards registered
// with it have work an Advance would find, and wakes the actors of those
// only; each then fetches as after an enqueue notice. It stands in for
// each idle actor's own poll, the safety net for enqueue notices lost while
// pub/sub reconnects and for due work nobody announced, so that an idle
// node's polls cost the same whatever its number of shards. At most one
// call is in flight; a failed poll wakes nobody and is tried again at the
// next interval (an actor's timer at the due time it knows still fires).
//
// The node that owns the Poller starts it with Start and stops it with
// Stop; shard actors register and deregister from their own goroutines.
// Its methods are safe for concurrent use.
type Poller struct {
	store persistence.Store
	every time.Duration
	clock clock.Clock
	log   *slog.Logger

	mu      sync.Mutex                      // guards shards, started, stopped and stop
	shards  map[persistence.ShardRef]polled // the idle shards, by shard
	started bool                            // Start ran
	stopped bool                            // Stop ran
	stop    func() bool                     // cancels the armed tick
	tick    chan struct{}                   // a poll is due (buffered: one pending tick)
	base    context.Context                 // cancelled by Stop
	cancel  context.CancelFunc              // cancels base
	done    chan struct{}                   // closed when the loop returns
}

// polled is one registered actor: its incarnation and how to wake it.
type polled struct {
	inst uint64
	wake func()
}

// NewPoller returns a Poller of store's shards every interval, timed by clk
// [clock.Real()].
func NewPoller(store persistence.Store, every time.Duration, clk clock.Clock, log *slog.Logger) *Poller {
	if clk == nil {
		clk = clock.Real()
	}
	if log == nil {
		log = slog.Default()
	}
	return &Poller{store: store, every: every, clock: clk, log: log,
		shards: map[persistence.ShardRef]polled{}, tick: make(chan struct{}, 1), done: make(chan struct{})}
}

// Start starts the polling loop; it returns at once. A second call, or a
// call after Stop, does nothing.
func (p *Poller) Start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.stopped {
		return
	}
	p.started = true
	p.base, p.cancel = context.WithCancel(context.Background())
	p.armLocked()
	go p.loop()
}

// Stop stops the loop, cancelling a poll in flight (it wakes nobody), and
// waits for it to return, or for ctx to end (its error is returned then).
// Stop is idempotent.
func (p *Poller) Stop(ctx context.Context) error {
	p.mu.Lock()
	started := p.started
	p.stopped = true
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// add registers the idle actor incarnation inst of ref (replacing the
// shard's previous registration); wake is called when a poll finds work in
// the shard. It must not block.
func (p *Poller) add(ref persistence.ShardRef, inst uint64, wake func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shards[ref] = polled{inst: inst, wake: wake}
}

// remove deregisters ref, if incarnation inst registered it. A poll already
// in flight may still wake it.
func (p *Poller) remove(ref persistence.ShardRef, inst uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x, ok := p.shards[ref]; ok && x.inst == inst {
		delete(p.shards, ref)
	}
}

// armLocked arms the next tick one interval from now.
func (p *Poller) armLocked() {
	if p.stopped {
		return
	}
	p.stop = p.clock.AfterFunc(p.every, func() {
		select {
		case p.tick <- struct{}{}:
		default:
		}
	})
}

func (p *Poller) loop() {
	defer close(p.done)
	var refs []persistence.ShardRef
	var wakes []func()
	fails := 0
	for {
		select {
		case <-p.base.Done():
			return
		case <-p.tick:
		}
		p.mu.Lock()
		refs, wakes = refs[:0], wakes[:0]
		for ref, x := range p.shards {
			refs = append(refs, ref)
			wakes = append(wakes, x.wake)
		}
		// The next poll is due one interval after this one's send time.
		p.armLocked()
		p.mu.Unlock()
		if len(refs) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(p.base, p.every)
		work, err := p.store.PollShards(ctx, refs)
		cancel()
		if p.base.Err() != nil {
			return // stopped
		}
		switch {
		case err != nil:
			fails++
			if fails == 1 || fails%20 == 0 {
				p.log.Warn("idle poll failed; trying again at the next interval", "shards", len(refs), "err", err, "attempt", fails)
			}
		case len(work) != len(refs):
			p.log.Error("idle poll: the store answered for another number of shards; waking them all", "shards", len(refs), "answers", len(work))
			for _, wake := range wakes {
				wake()
			}
		default:
			if fails > 0 {
				p.log.Info("idle poll works again", "after_failures", fails)
				fails = 0
			}
			for i, w := range work {
				if w {
					wakes[i]()
				}
			}
		}
		clear(wakes) // drop the references to the wake functions
	}
}
