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

// shapeWatcher is the service that keeps the node's view of its queues'
// shapes (docs/contract.md §3.17): which shards each queue has, read from
// the store in one call at once after a controls notice (a reshard's start
// and end send one), every ControlPoll while a reshard runs, and every
// idleFactor ControlPolls otherwise. When a shape changes (a reshard started or
// ended, through any node) it has the shards assigned again. While a
// reshard runs it wakes the owners of the drained shards (their next
// Advance tells them to drain, however idle they were) and asks the store
// to end the reshard (persistence.Resharder.FinishReshard), which every
// node does, so that the reshard ends however its nodes come and go.
type shapeWatcher struct {
	store   persistence.Resharder
	queues  []string
	poll    time.Duration
	timeout time.Duration
	clock   clock.Clock
	log     *slog.Logger
	poke    chan struct{} // a read is wanted now (buffered 1)
	loop    loop

	mu     sync.Mutex                        // guards shapes
	shapes map[string]persistence.QueueShape // the last view, by queue
}

// newShapeWatcher returns the watcher of a store that can reshard, nil for
// one that cannot: its queues keep their shards.
func newShapeWatcher(store persistence.NodeStore, queues []string, poll, timeout time.Duration, clk clock.Clock, log *slog.Logger) *shapeWatcher {
	rs, ok := store.(persistence.Resharder)
	if !ok {
		return nil
	}
	return &shapeWatcher{store: rs, queues: queues, poll: poll, timeout: timeout, clock: clk, log: log,
		poke: make(chan struct{}, 1), shapes: map[string]persistence.QueueShape{}}
}

// Start starts the loop: changed is called with the new view after each
// change, wake with the drained shards to wake while a reshard runs.
func (w *shapeWatcher) Start(changed func(map[string]persistence.QueueShape), wake func([]persistence.ShardRef)) {
	if w == nil {
		return
	}
	w.loop.start(func(ctx context.Context) { w.run(ctx, changed, wake) })
}

// Stop stops the loop and waits for it (or for ctx).
func (w *shapeWatcher) Stop(ctx context.Context) error {
	if w == nil {
		return nil
	}
	return w.loop.stop(ctx)
}

// Refresh asks for a read at once (a controls notice: a reshard started or
// ended).
func (w *shapeWatcher) Refresh() {
	if w == nil {
		return
	}
	pokeNow(w.poke)
}

// read reads the shapes of the node's queues (one store call) and reports
// whether the view changed; it returns the view (a copy).
func (w *shapeWatcher) read(ctx context.Context) (map[string]persistence.QueueShape, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	view := make(map[string]persistence.QueueShape, len(w.queues))
	if len(w.queues) > 0 {
		shapes, err := w.store.Shapes(ctx, w.queues...)
		if err != nil {
			return nil, false, err
		}
		for i, q := range w.queues {
			view[q] = shapes[i]
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := !maps.Equal(view, w.shapes)
	for q, sh := range view {
		if old, ok := w.shapes[q]; ok && old != sh {
			if sh.Resharding() {
				w.log.Info("queue resharding: its ids move to new shards", "queue", q, "from", sh.From.Count, "to", sh.Current.Count)
			} else {
				w.log.Info("queue resharded", "queue", q, "shards", sh.Current.Count)
			}
		}
	}
	w.shapes = view
	return maps.Clone(view), changed, nil
}

// idleFactor stretches the watcher's poll while no reshard of its queues
// runs: a reshard's start reaches the nodes as a controls notice, the poll
// only covers a lost one.
const idleFactor = 5

func (w *shapeWatcher) run(ctx context.Context, changed func(map[string]persistence.QueueShape), wake func([]persistence.ShardRef)) {
	resharding := false // as of the last read: the poll is not stretched
	every := func() time.Duration {
		if resharding {
			return w.poll
		}
		return w.poll * idleFactor
	}
	watch(ctx, w.clock, w.poke, every, w.log, "cannot read the queues' shards; keeping the last view", func(ctx context.Context) error {
		view, ch, err := w.read(ctx)
		if err != nil {
			return err
		}
		if ch {
			changed(view)
		}
		resharding = false
		for q, sh := range view {
			if !sh.Resharding() {
				continue
			}
			resharding = true
			wake(sh.From.Refs(q))
			fctx, cancel := context.WithTimeout(ctx, w.timeout)
			if _, err := w.store.FinishReshard(fctx, q); err != nil && ctx.Err() == nil {
				w.log.Debug("cannot look at the reshard's progress", "queue", q, "err", err)
			}
			cancel()
		}
		return nil
	})
}

// shapesChanged takes a new view of the queues' shapes: the shards are
// assigned again (a single node serves them all; in a cluster the placement
// is computed again).
func (e *Engine) shapesChanged(view map[string]persistence.QueueShape) {
	e.mu.Lock()
	e.shapes = view
	service := e.service
	if service == nil && e.ready && e.placed {
		e.assignLocked(e.allShards(), nil)
	}
	e.mu.Unlock()
	if service != nil {
		service.Refresh()
	}
}

// wakeShards has the owners of refs (if this node serves them) look at
// their shards now.
func (e *Engine) wakeShards(refs []persistence.ShardRef) {
	for _, ref := range refs {
		e.tellNodeActor(node.Notice{Ref: ref})
	}
}

// shardNumbers returns the shard numbers of each of the node's queues, for
// the cluster's placement.
func (e *Engine) shardNumbers() map[string][]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string][]int, len(e.cfg.Queues))
	for _, ref := range e.allShards() {
		out[ref.Queue] = append(out[ref.Queue], ref.Shard)
	}
	return out
}
