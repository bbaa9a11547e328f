package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
)

// loop is the lifecycle every service of the engine shares: one goroutine,
// started once, that runs until its context is cancelled. stop cancels it
// and waits for it to return.
type loop struct {
	mu     sync.Mutex         // guards the fields below
	cancel context.CancelFunc // nil until start
	done   chan struct{}      // closed when the goroutine returns
	halted bool               // stop ran: start does nothing any more
}

// start runs run in a goroutine of the loop's own, with a context that stop
// cancels. A second call, or a call after stop, does nothing.
func (l *loop) start(run func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil || l.halted {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() { // owned by the loop: stop cancels ctx and waits on done
		defer close(l.done)
		run(ctx)
	}()
}

// stop cancels the goroutine and waits for it to return, or for ctx to end
// (its error is returned then). It is idempotent; stopping a loop that never
// started does nothing.
func (l *loop) stop(ctx context.Context) error {
	l.mu.Lock()
	l.halted = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch is the loop of the engine's watchers: until ctx ends, it runs step
// wait() after the last run, or at once after a poke (pokeNow). A step that
// fails (ctx not ended) is logged with failure, the first time and every
// 60th time in a row; the watcher keeps its last view.
func watch(ctx context.Context, clk clock.Clock, poke <-chan struct{}, wait func() time.Duration, log *slog.Logger, failure string, step func(context.Context) error) {
	failed := 0
	for {
		tick, stop := clock.After(clk, wait())
		select {
		case <-ctx.Done():
			stop()
			return
		case <-poke:
			stop()
		case <-tick:
		}
		if err := step(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if failed++; failed == 1 || failed%60 == 0 {
				log.Warn(failure, "err", err, "attempt", failed)
			}
			continue
		}
		failed = 0
	}
}

// pokeNow asks a watcher's loop for a run at once; poke is buffered 1, so
// pokes made before the run coalesce.
func pokeNow(poke chan<- struct{}) {
	select {
	case poke <- struct{}{}:
	default:
	}
}
