package pull

import (
	"context"
	"fmt"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/deferred"
)

// Held calls: a node hands the calls of a concurrent window with a
// deferred.Call in their context, and the broker holds them instead of
// blocking their goroutines until an answer. Whatever ends a held call
// decides it under Broker.mu (overLocked) and ends its deferred.Call after
// releasing it, on its own goroutine: an answer, a lease's deadline, a
// sweep, Stop, the end of the window's deadline context (watched once per
// context), or the node's stop of the call (a cancel of one of its ids).

// hold holds a call of q; it returns deferred.ErrHeld, or what the
// handler returns when the call cannot be held.
func (b *Broker) hold(d *deferred.Call, q *queue, batch *orderly.Batch) error {
	ctx := d.Context()
	now := b.now()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(2 * b.leaseOf(q))
	}
	left := deadline.Sub(now)
	c := &call{ctx: ctx, d: d, q: q, batch: batch, deadline: deadline, giveBack: now.Add(left - min(b.leaseOf(q), left/2))}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return orderly.Snooze(0)
	}
	if cause := d.Hold(func(cause error) { b.stopHeld(c, cause) }); cause != nil {
		return fmt.Errorf("pull: %w", cause)
	}
	w := b.watches[ctx]
	if w == nil {
		w = &watch{}
		w.stop = context.AfterFunc(ctx, func() { b.ctxEnded(ctx, w) })
		b.watches[ctx] = w
	}
	c.w = w
	w.calls = append(w.calls, c)
	w.live++
	b.offerLocked(q, c)
	return deferred.ErrHeld
}

// overLocked records that held call c's end is decided: it leaves its
// context's watch, which stops once none of its calls is left.
func (b *Broker) overLocked(c *call) {
	c.over = true
	w := c.w
	if w.live--; w.live == 0 {
		w.stop()
		if b.watches[c.ctx] == w {
			delete(b.watches, c.ctx)
		}
	}
}

// heldOverLocked appends c to ends when it is a held call not over yet,
// and records it over.
func (b *Broker) heldOverLocked(ends []*call, c *call) []*call {
	if c.d == nil || c.over {
		return ends
	}
	b.overLocked(c)
	return append(ends, c)
}

// endHeld ends the held calls with err; call it without Broker.mu.
func endHeld(calls []*call, err error) {
	for _, c := range calls {
		c.d.End(err)
	}
}

// ctxEnded ends the held calls of w, ctx's watch, when ctx ended: the
// window's deadline passed, or the node gave the window up (lease lost,
// drain deadline, stop). An unpulled call leaves the queue; a pulled one
// ends its part of its lease, as a waiting handler's would.
func (b *Broker) ctxEnded(ctx context.Context, w *watch) {
	b.mu.Lock()
	if b.watches[ctx] == w {
		delete(b.watches, ctx)
	}
	var ends []*call
	for _, c := range w.calls {
		if c.over {
			continue
		}
		b.leaveLocked(c, reasonOf(ctx))
		c.over = true
		ends = append(ends, c)
	}
	w.calls, w.live = nil, 0
	b.mu.Unlock()
	endHeld(ends, fmt.Errorf("pull: %w", context.Cause(ctx)))
}

// leaveLocked takes held call c out of its queue when no pull took it, or
// ends its part of its lease for reason.
func (b *Broker) leaveLocked(c *call, reason string) {
	if c.lease == nil {
		b.unofferLocked(c.q, c)
	} else if c.gone == "" {
		b.endLockedCall(c, reason)
	}
}

// stopHeld is held call c's stop (deferred.Call.Hold): the node gave it up
// with cause (an id of it was cancelled, or it settled it itself). It ends
// as a waiting handler does when its context ends: its lease, when pulled,
// is lost for its ids.
func (b *Broker) stopHeld(c *call, cause error) {
	b.mu.Lock()
	if c.over {
		b.mu.Unlock()
		return
	}
	b.leaveLocked(c, ReasonLost)
	b.overLocked(c)
	b.mu.Unlock()
	c.d.End(fmt.Errorf("pull: %w", cause))
}
