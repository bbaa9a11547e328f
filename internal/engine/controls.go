package engine

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// controlWatcher is the service that keeps the node's view of its queues'
// controls (docs/contract.md §9): it reads the pause of every queue in one
// store call per ControlPoll, and at once after a controls notice
// (Refresh) or a change made through this node (Set), and tells the node
// actor (node.Controls) whenever the view changes. The node actor holds the
// view it acts on; the watcher keeps its own copy for Paused. A read that
// was under way when a change through this node came is not taken: it may
// predate the change (which the node actor took at once, node.SetPause).
type controlWatcher struct {
	store  persistence.ControlStore
	queues []string
	poll   time.Duration
	// timeout bounds one read: LeaseTTL, at least 5 s.
	timeout time.Duration
	clock   clock.Clock
	log     *slog.Logger
	poke    chan struct{} // a read is wanted now (buffered 1)
	loop    loop

	mu     sync.Mutex      // guards paused and sets
	paused map[string]bool // the last view, by queue
	sets   uint64          // changes made through this node (Set), so far
}

func newControlWatcher(store persistence.ControlStore, queues []string, poll, timeout time.Duration, clk clock.Clock, log *slog.Logger) *controlWatcher {
	return &controlWatcher{store: store, queues: queues, poll: poll, timeout: timeout, clock: clk, log: log,
		poke: make(chan struct{}, 1), paused: map[string]bool{}}
}

// Start starts the loop, which tells changes to tell; it returns at once.
func (w *controlWatcher) Start(tell func(any)) {
	w.loop.start(func(ctx context.Context) { w.run(ctx, tell) })
}

// Stop stops the loop and waits for it (or for ctx).
func (w *controlWatcher) Stop(ctx context.Context) error { return w.loop.stop(ctx) }

// Refresh asks for a read at once.
func (w *controlWatcher) Refresh() { pokeNow(w.poke) }

// Paused reports whether the queue is paused, as last read or set; false
// for a queue the node does not serve.
func (w *controlWatcher) Paused(queue string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused[queue]
}

// Set records a change made through this node (already written to the
// store), so that a read under way when it came is not taken; a read
// follows at once. The node actor is told by the caller (node.SetPause).
func (w *controlWatcher) Set(queue string, paused bool) {
	defer w.Refresh()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.served(queue) {
		return
	}
	w.paused[queue] = paused
	w.sets++
}

func (w *controlWatcher) served(queue string) bool {
	for _, q := range w.queues {
		if q == queue {
			return true
		}
	}
	return false
}

// read reads the controls of the node's queues and returns the new view
// (a copy).
func (w *controlWatcher) read(ctx context.Context) (map[string]bool, error) {
	view, _, err := w.update(ctx)
	return view, err
}

// update reads the controls and reports whether the view changed.
func (w *controlWatcher) update(ctx context.Context) (map[string]bool, bool, error) {
	if len(w.queues) == 0 {
		return map[string]bool{}, false, nil
	}
	w.mu.Lock()
	sets := w.sets
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	ctl, err := w.store.Controls(ctx, w.queues...)
	if err != nil {
		return nil, false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sets != sets {
		// A change made through this node came in while the read was on
		// its way: the read may predate it. Set asked for another one.
		return maps.Clone(w.paused), false, nil
	}
	changed := false
	for i, q := range w.queues {
		p := ctl[i].Paused
		if w.paused[q] == p {
			continue
		}
		changed = true
		w.paused[q] = p
		if p {
			w.log.Info("queue paused: no new handler call starts", "queue", q)
		} else {
			w.log.Info("queue resumed", "queue", q)
		}
	}
	return maps.Clone(w.paused), changed, nil
}

func (w *controlWatcher) run(ctx context.Context, tell func(any)) {
	every := func() time.Duration { return w.poll }
	watch(ctx, w.clock, w.poke, every, w.log, "cannot read the queue controls; keeping the last view", func(ctx context.Context) error {
		view, changed, err := w.update(ctx)
		if err == nil && changed {
			tell(node.Controls{Paused: view})
		}
		return err
	})
}
