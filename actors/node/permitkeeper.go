package node

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// permitsHeld is the permit keeper's message to its node actor: how many of
// each limited queue's max_concurrency permits the node holds now.
type permitsHeld struct{ held map[string]int }

// permitKeeper holds this node's share of the max_concurrency permits of
// its limited queues (docs/contract.md §9). Every LeaseTTL/3, and at once
// when a queue's demand grows or falls to none, it sets each queue's
// permits to the node actor's demand (at most the limit) in one
// Store.SetPermits call on the queue's slot, renewing those it keeps for
// LeaseTTL, and tells the node actor what it holds when that changes. A
// node that cannot renew counts its permits as gone once LeaseTTL minus a
// margin passed since the last renewal; a dead node's expire in the store
// within LeaseTTL.
//
// The node actor owns it: it starts the keeper when it starts, tells it its
// demand after every message (setDemand, from the actor's goroutine) and
// stops it when it stops or restarts; stop gives the permits back, so that
// other nodes need not wait for them to expire.
type permitKeeper struct {
	store  persistence.ControlStore
	holder string
	limit  map[string]int
	queues []string // the limited queues, sorted
	ttl    time.Duration
	clock  clock.Clock
	log    *slog.Logger
	send   func(permitsHeld) // to the node actor

	mu     sync.Mutex     // guards demand
	demand map[string]int // the node actor's last demand, per limited queue
	poke   chan struct{}  // a demand grew or fell to none (buffered 1)

	cancel context.CancelFunc
	done   chan struct{} // closed when the loop returns
}

func newPermitKeeper(cfg Config, send func(permitsHeld)) *permitKeeper {
	queues := make([]string, 0, len(cfg.Limits))
	for q := range cfg.Limits {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	return &permitKeeper{
		store: cfg.Store, holder: cfg.PermitHolder, limit: cfg.Limits, queues: queues, ttl: cfg.LeaseTTL,
		clock: cfg.Clock, log: cfg.Logger, send: send,
		demand: map[string]int{}, poke: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// start starts the keeper's loop; it returns at once.
func (k *permitKeeper) start() {
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go k.run(ctx) // owned by the keeper: stop cancels and waits for it
}

// stop ends the loop, waits for it and gives the node's permits back.
func (k *permitKeeper) stop() {
	k.cancel()
	<-k.done
	for _, q := range k.queues {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if _, err := k.store.SetPermits(ctx, q, k.holder, 0, k.limit[q], k.ttl); err != nil {
			k.log.Warn("cannot release the max_concurrency permits; they expire by themselves", "queue", q, "err", err)
		}
		cancel()
	}
}

// setDemand records how many shards of each queue hold or wait for a
// permit; a limited queue whose demand grew, or fell to none, gets its
// permits set at once.
func (k *permitKeeper) setDemand(d map[string]int) {
	k.mu.Lock()
	changed := false
	for _, q := range k.queues {
		n, old := d[q], k.demand[q]
		if n > old || (n == 0 && old > 0) {
			changed = true
		}
		k.demand[q] = n
	}
	k.mu.Unlock()
	if changed {
		select {
		case k.poke <- struct{}{}:
		default:
		}
	}
}

func (k *permitKeeper) wants(q string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return min(k.demand[q], k.limit[q])
}

func (k *permitKeeper) run(ctx context.Context) {
	defer close(k.done)
	every := k.ttl / 3
	lastOK := map[string]time.Time{}
	held := map[string]int{}
	failed := 0
	for {
		changed := false
		for _, q := range k.queues {
			sent := k.clock.Now()
			cctx, cancel := context.WithTimeout(ctx, max(k.ttl, 5*time.Second))
			got, err := k.store.SetPermits(cctx, q, k.holder, k.wants(q), k.limit[q], k.ttl)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if failed++; failed == 1 || failed%60 == 0 {
					k.log.Warn("cannot renew the max_concurrency permits", "queue", q, "err", err, "attempt", failed)
				}
				if t, ok := lastOK[q]; (!ok || !k.clock.Now().Before(t.Add(k.ttl-k.ttl/4))) && held[q] != 0 {
					held[q], changed = 0, true
				}
				continue
			}
			failed = 0
			lastOK[q] = sent
			if held[q] != got {
				held[q], changed = got, true
			}
		}
		if changed {
			k.send(permitsHeld{held: maps.Clone(held)})
		}
		tick, stop := clock.After(k.clock, every)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-k.poke:
			stop()
		case <-tick:
		}
	}
}
