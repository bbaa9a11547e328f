package shard

import (
	"context"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
)

// cadence is what the node's Renewer and Poller share: a loop goroutine,
// started once, that runs a round each time a timer armed for an instant
// fires, and is stopped by cancelling its context.
type cadence struct {
	clock clock.Clock

	mu      sync.Mutex         // guards the fields below
	started bool               // start ran
	stopped bool               // halt ran
	stop    func() bool        // cancels the armed tick
	next    time.Time          // when the armed tick fires
	tick    chan struct{}      // a round is due (buffered: one pending tick)
	base    context.Context    // cancelled by halt
	cancel  context.CancelFunc // cancels base
	done    chan struct{}      // closed when the loop returns
}

func newCadence(clk clock.Clock) cadence {
	if clk == nil {
		clk = clock.Real()
	}
	return cadence{clock: clk, tick: make(chan struct{}, 1), done: make(chan struct{})}
}

// start arms the first tick at first and starts the loop, which calls
// round(base) at each tick until halt; it returns at once. A second call,
// or a call after halt, does nothing.
func (c *cadence) start(first time.Time, round func(base context.Context)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.stopped {
		return
	}
	c.started = true
	c.base, c.cancel = context.WithCancel(context.Background())
	c.armLocked(first)
	base := c.base
	go func() { // owned by the cadence: ends when halt cancels base
		defer close(c.done)
		for {
			select {
			case <-base.Done():
				return
			case <-c.tick:
			}
			round(base)
		}
	}()
}

// halt cancels the loop's context (a round in flight sees it) and the
// armed tick, and waits for the loop to return, or for ctx to end (its
// error is returned then). It is idempotent.
func (c *cadence) halt(ctx context.Context) error {
	c.mu.Lock()
	started := c.started
	c.stopped = true
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// arm arms the next tick at at, replacing the armed one.
func (c *cadence) arm(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked(at)
}

// armEarlier arms the next tick at at if the loop runs and the armed tick
// is later.
func (c *cadence) armEarlier(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started && at.Before(c.next) {
		c.armLocked(at)
	}
}

// armLocked arms the next tick at at, replacing the armed one; c.mu is
// held.
func (c *cadence) armLocked(at time.Time) {
	if c.stopped {
		return
	}
	if c.stop != nil {
		c.stop()
	}
	c.next = at
	c.stop = c.clock.AfterFunc(max(clock.Until(c.clock, at), 0), func() {
		select {
		case c.tick <- struct{}{}:
		default:
		}
	})
}
