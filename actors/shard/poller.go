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
	store persistence.ShardStore
	every time.Duration
	log   *slog.Logger

	cadence // the loop

	mu     sync.Mutex                      // guards shards; held while arming the cadence (LOCKS.md)
	shards map[persistence.ShardRef]polled // the idle shards, by shard
	fails  int                             // consecutive failed polls (the loop's own)
}

// polled is one registered actor: its incarnation and how to wake it.
type polled struct {
	inst uint64
	wake func()
}

// NewPoller returns a Poller of store's shards every interval, timed by clk
// [clock.Real()].
func NewPoller(store persistence.ShardStore, every time.Duration, clk clock.Clock, log *slog.Logger) *Poller {
	if log == nil {
		log = slog.Default()
	}
	return &Poller{store: store, every: every, log: log, cadence: newCadence(clk), shards: map[persistence.ShardRef]polled{}}
}

// Start starts the polling loop; it returns at once. A second call, or a
// call after Stop, does nothing.
func (p *Poller) Start() {
	p.start(p.clock.Now().Add(p.every), p.round)
}

// Stop stops the loop, cancelling a poll in flight (it wakes nobody), and
// waits for it to return, or for ctx to end (its error is returned then).
// Stop is idempotent.
func (p *Poller) Stop(ctx context.Context) error {
	return p.halt(ctx)
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

// round polls every registered shard in one call and wakes those with
// work.
func (p *Poller) round(base context.Context) {
	p.mu.Lock()
	refs := make([]persistence.ShardRef, 0, len(p.shards))
	wakes := make([]func(), 0, len(p.shards))
	for ref, x := range p.shards {
		refs = append(refs, ref)
		wakes = append(wakes, x.wake)
	}
	// The next poll is due one interval after this one's send time.
	p.arm(p.clock.Now().Add(p.every))
	p.mu.Unlock()
	if len(refs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(base, p.every)
	work, err := p.store.PollShards(ctx, refs)
	cancel()
	if base.Err() != nil {
		return // stopped
	}
	switch {
	case err != nil:
		p.fails++
		if p.fails == 1 || p.fails%20 == 0 {
			p.log.Warn("idle poll failed; trying again at the next interval", "shards", len(refs), "err", err, "attempt", p.fails)
		}
	case len(work) != len(refs):
		p.log.Error("idle poll: the store answered for another number of shards; waking them all", "shards", len(refs), "answers", len(work))
		for _, wake := range wakes {
			wake()
		}
	default:
		if p.fails > 0 {
			p.log.Info("idle poll works again", "after_failures", p.fails)
			p.fails = 0
		}
		for i, w := range work {
			if w {
				wakes[i]()
			}
		}
	}
}
