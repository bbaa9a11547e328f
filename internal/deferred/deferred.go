// Package deferred lets a handler end a call after it has returned: a
// handler that only hands its batch on (the pull broker hands it to a
// worker that pulls it) holds the call instead of waiting for the answer on
// a goroutine of its own. The node puts a *Call in the context of each call
// of a concurrent window; a handler that finds one may Hold it and return
// ErrHeld, and End it once the answer came. The node then converts the
// outcome and settles the call, exactly as if the handler had returned that
// error when End was called.
//
// A Call ends once: by End, or by Stop, which the node calls when it gives
// the call up (an id of it was cancelled); Stop asks the holder to end it.
package deferred

import (
	"context"
	"errors"
	"sync"

	"github.com/orderlyhq/orderly/persistence"
)

// ErrHeld is what a handler returns after Hold: the call ends later, with
// End.
var ErrHeld = errors.New("deferred: the call is held; it ends later")

// Call is one handler call that its handler may hold. Its methods are safe
// for concurrent use.
type Call struct {
	ctx     context.Context // the deadline context (see Context)
	done    func(error)     // the shard's: settles the call with the handler's error
	outcome func(error) ([]persistence.Failure, error)

	mu     sync.Mutex // guards what follows
	held   bool
	ended  bool
	stop   func(cause error) // the holder's, set by Hold
	cause  error             // why Stop gave the call up
	endErr error             // what the call ended with
	onEnd  []func(error)     // OnEnd's, run once the call ended
}

type key struct{}

// New returns a Call whose deadline context is ctx (shared by the calls of
// a window: a holder watches it once, not per call) and whose done settles
// the call with the handler's error once it ended.
func New(ctx context.Context, done func(err error)) *Call {
	return &Call{ctx: ctx, done: done}
}

// With returns ctx carrying c.
func With(ctx context.Context, c *Call) context.Context { return context.WithValue(ctx, key{}, c) }

// From returns the Call ctx carries, or nil: the call cannot be held.
func From(ctx context.Context) *Call {
	c, _ := ctx.Value(key{}).(*Call)
	return c
}

// SetOutcome sets how the handler's error converts into the call's
// failures and error (the node's processor sets it before it calls the
// handler); Outcome runs it.
func (c *Call) SetOutcome(f func(err error) ([]persistence.Failure, error)) { c.outcome = f }

// Outcome converts the error a held call ended with, as SetOutcome says;
// without it, the error is the call's.
func (c *Call) Outcome(err error) ([]persistence.Failure, error) {
	if c.outcome == nil {
		return nil, err
	}
	return c.outcome(err)
}

// Context is the call's deadline context: it ends at the call's deadline,
// or when the node gives up every call of the window (lease lost, drain
// deadline, stop), with that cause. A holder ends the call when it ends.
func (c *Call) Context() context.Context { return c.ctx }

// Hold marks the call held by its handler, which returns ErrHeld from it and
// ends it later with End; stop is how the node asks it to end the call
// early (with the cause: an id of it was cancelled), on the node's
// goroutine. When the node gave the call up already, the call is not held:
// Hold returns the cause, and the handler returns as it would when its
// context ended.
func (c *Call) Hold(stop func(cause error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return c.cause
	}
	c.held, c.stop = true, stop
	return nil
}

// Held reports whether the handler held the call.
func (c *Call) Held() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// End ends a held call with the handler's error (nil: every id done, or
// what the handler left on the batch). Only the first End counts; it runs
// the node's settling on the caller's goroutine.
func (c *Call) End(err error) {
	c.mu.Lock()
	if c.ended || !c.held {
		c.mu.Unlock()
		return
	}
	c.ended, c.endErr = true, err
	hooks := c.onEnd
	c.onEnd = nil
	c.mu.Unlock()
	for _, f := range hooks {
		f(err)
	}
	c.done(err)
}

// OnEnd runs f with the error a held call ends with, once it ended (at
// once if it has), before the node settles it: a middleware that saw its
// handler return ErrHeld ends its own work there (a tracing span). A call
// the node settled itself (Settled) ends with ErrSettled.
func (c *Call) OnEnd(f func(err error)) {
	c.mu.Lock()
	if c.ended {
		err := c.endErr
		c.mu.Unlock()
		f(err)
		return
	}
	c.onEnd = append(c.onEnd, f)
	c.mu.Unlock()
}

// ErrSettled is the cause a holder's stop gets when the node settled a call
// its handler held without returning ErrHeld (a middleware replaced the
// error): the call is over, and a later End is ignored.
var ErrSettled = errors.New("deferred: the call was settled without its holder")

// Settled is called by the node when the handler returned something other
// than ErrHeld: it reports whether the node settles the call with what the
// handler returned. A call not held is the node's to settle. A held call is
// too unless its holder ended it already (End settled it); its holder is
// told (stop, with ErrSettled), and a later End is ignored.
func (c *Call) Settled() bool {
	c.mu.Lock()
	if !c.held {
		c.mu.Unlock()
		return true
	}
	if c.ended {
		c.mu.Unlock()
		return false
	}
	c.ended, c.endErr = true, ErrSettled
	stop, hooks := c.stop, c.onEnd
	c.onEnd = nil
	c.mu.Unlock()
	stop(ErrSettled)
	for _, f := range hooks {
		f(ErrSettled)
	}
	return true
}

// Stop gives the call up with cause: a held call's holder is asked to end
// it (which it does with End); a call not held yet cannot be held any more.
// Cause reports it.
func (c *Call) Stop(cause error) {
	c.mu.Lock()
	if c.cause == nil {
		c.cause = cause
	}
	stop, ended := c.stop, c.ended
	c.mu.Unlock()
	if stop != nil && !ended {
		stop(cause)
	}
}

// Cause is what Stop gave the call up with, or nil.
func (c *Call) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}
