package shard

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly/internal/deferred"
	"github.com/orderlyhq/orderly/persistence"
)

// The calls of a window: with Config.ConcurrentCalls above 1, up to that
// many calls of one window run at once, each over its own ids (a window
// holds each id once, so an id still has one call at a time and its
// payloads keep their order). The run starts them in window order, each
// after the checks a sequential call passes (rate limit, lease view, time
// bound, pause), and settles the window once every call returned.

// callInfo records the running handler calls of a window: their starts and
// deadlines, read by the actor's stuck check, and their ids and cancel
// functions with the ids cancelled (docs/contract.md §3.13) during the
// window, for the actor's Cancel.
type callInfo struct {
	mu        sync.Mutex // guards every field
	running   map[*runningCall]struct{}
	last      runningCall     // the last call begun: the stuck check's view between calls
	cancelled map[string]bool // ids cancelled during the window
}

// runningCall is one handler call of a window.
type runningCall struct {
	start, deadline time.Time
	ctx             context.Context         // the call's deadline context (shared with other calls)
	ids             []persistence.Job       // the call's jobs
	stop            context.CancelCauseFunc // cancels the call's own context; nil for a call without one
	// d is the call of a concurrent window as its handler may hold it
	// (internal/deferred), nil in a sequential window: a cancel stops it
	// after callInfo.mu is released, since a held call then ends on the
	// canceller's goroutine, and that takes callInfo.mu.
	d *deferred.Call
}

// begin records the call about to run; false when one of its ids was
// cancelled already (the call must not start).
func (ci *callInfo) begin(rc *runningCall) bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	ci.last = runningCall{start: rc.start, deadline: rc.deadline}
	for _, j := range rc.ids {
		if ci.cancelled[j.ID] {
			return false
		}
	}
	if ci.running == nil {
		ci.running = map[*runningCall]struct{}{}
	}
	ci.running[rc] = struct{}{}
	return true
}

// end records that rc returned; it reports whether rc was cancelled for
// one of its ids.
func (ci *callInfo) end(rc *runningCall) bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	hit := false
	for i := 0; i < len(rc.ids) && len(ci.cancelled) > 0; i++ {
		hit = hit || ci.cancelled[rc.ids[i].ID]
	}
	delete(ci.running, rc)
	return hit
}

// window starts a window: ids cancelled earlier are kept only when the
// window holds them (a cancel may come before the window starts).
func (ci *callInfo) window(jobs []persistence.Job) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if len(ci.cancelled) == 0 {
		return
	}
	keep := map[string]bool{}
	for _, j := range jobs {
		if ci.cancelled[j.ID] {
			keep[j.ID] = true
		}
	}
	ci.cancelled = keep
}

// finish ends a window: the ids cancelled are forgotten (the settle that
// follows disposes of them), so that an id enqueued again later runs.
func (ci *callInfo) finish() {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	clear(ci.cancelled)
}

// cancel records id as cancelled and cancels the running call that holds
// id; it reports whether one did.
func (ci *callInfo) cancel(id string) bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.cancelled == nil {
		ci.cancelled = map[string]bool{}
	}
	if len(ci.cancelled) >= maxCancelled {
		clear(ci.cancelled)
	}
	ci.cancelled[id] = true
	var d *deferred.Call
	hit := false
	for rc := range ci.running {
		if hit = holds(rc, id); hit {
			if rc.stop != nil {
				rc.stop(persistence.ErrCancelled)
			}
			d = rc.d
			break
		}
	}
	if d != nil {
		ci.mu.Unlock()
		d.Stop(persistence.ErrCancelled)
		ci.mu.Lock() // for the deferred Unlock
	}
	return hit
}

// holds reports whether rc's call has id.
func holds(rc *runningCall, id string) bool {
	for _, j := range rc.ids {
		if j.ID == id {
			return true
		}
	}
	return false
}

// maxCancelled bounds the ids a shard actor remembers as cancelled.
const maxCancelled = 1024

// get returns the start and deadline of the running call that is due
// first, or of the last call begun when none runs.
func (ci *callInfo) get() (start, deadline time.Time) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	start, deadline = ci.last.start, ci.last.deadline
	first := true
	for rc := range ci.running {
		if first || rc.deadline.Before(deadline) {
			start, deadline, first = rc.start, rc.deadline, false
		}
	}
	return start, deadline
}

// callGroup runs the calls of one window concurrently, at most n at once,
// on the goroutines of pool. It is owned by the window's run: only that
// goroutine calls its methods.
type callGroup struct {
	pool  *callPool
	slots chan struct{}
	wg    sync.WaitGroup
	calls []groupCall // one per call of the window, in window order; started ones are calls[:started]
	next  int
}

// groupCall is one call of a concurrent window: its batch, its record and
// its outcome, allocated with the window's others.
type groupCall struct {
	g     *callGroup
	r     *windowRun
	rc    runningCall
	batch persistence.Batch
	part  processed
}

func newCallGroup(n, calls int, pool *callPool) *callGroup {
	g := &callGroup{pool: pool, slots: make(chan struct{}, n), calls: pool.takeCalls(calls)}
	for i := range g.calls {
		g.calls[i].g = g
	}
	return g
}

// acquire waits for a free slot.
func (g *callGroup) acquire() { g.slots <- struct{}{} }

// release gives back a slot acquired for a call that did not start.
func (g *callGroup) release() { <-g.slots }

// call returns the next call to fill and start.
func (g *callGroup) call() *groupCall {
	gc := &g.calls[g.next]
	g.next++
	return gc
}

// start runs gc, filled, on the slot acquired for it, recording its
// outcome on its part; a panic is kept for wait. Once the shard's handler
// held a call (internal/deferred), calls start on the run's goroutine: the
// handler returns at once, and the call ends when its holder ends it. (The
// calls that start before the first one held it take goroutines of the
// pool: a call's handler may block, and the others must not wait for it.)
func (g *callGroup) start(gc *groupCall) {
	g.wg.Add(1)
	if g.pool.holds.Load() {
		gc.do()
		return
	}
	g.pool.run(gc)
}

// do makes the call; unless its handler held it, the call is over when do
// returns.
func (gc *groupCall) do() {
	held := false
	defer func() {
		if r := recover(); r != nil {
			gc.part.panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
			held = false
		}
		if !held {
			gc.over()
		}
	}()
	held = gc.r.groupCall(gc)
}

// over gives back gc's slot and counts it returned.
func (gc *groupCall) over() {
	<-gc.g.slots
	gc.g.wg.Done()
}

// end settles a held call with the error its handler ended it with, on the
// goroutine of whoever ended it.
func (gc *groupCall) end(err error) {
	defer gc.over()
	defer func() {
		if r := recover(); r != nil {
			gc.part.panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	fs, err := gc.rc.d.Outcome(err)
	gc.r.settle(&gc.rc, gc.rc.ctx, gc.rc.d, &gc.batch, fs, err, &gc.part)
}

// wait waits for every call and adds their outcomes to out in window
// order. A call that panicked panics the run (the actor's task turns it
// into the actor's failure) once every call returned.
func (g *callGroup) wait(out *processed) {
	g.wg.Wait()
	for i := range g.calls[:g.next] {
		p := &g.calls[i].part
		if p.panicked != "" {
			panic("shard: a concurrent handler call panicked: " + p.panicked)
		}
		out.merge(p)
	}
	// out holds copies of what the calls recorded: their records go back
	// to the pool for the next window.
	g.pool.putCalls(g.calls)
	g.calls = nil
}

// merge adds what one call recorded on p to the window's outcome.
func (o *processed) merge(p *processed) {
	o.failures = append(o.failures, p.failures...)
	o.skipped = append(o.skipped, p.skipped...)
	o.interrupted = append(o.interrupted, p.interrupted...)
	o.states = append(o.states, p.states...)
	o.timers = append(o.timers, p.timers...)
	o.emits = append(o.emits, p.emits...)
	o.snoozes = append(o.snoozes, p.snoozes...)
	o.deaths = append(o.deaths, p.deaths...)
	o.discards = append(o.discards, p.discards...)
	for id, res := range p.results {
		if o.results == nil {
			o.results = map[string][]byte{}
		}
		o.results[id] = res
	}
	o.cancelled += p.cancelled
	if p.err != nil {
		o.err = p.err
	}
}

// callPool keeps the goroutines of a shard actor's concurrent calls between
// windows, so that a busy shard does not start (and grow the stack of) a
// goroutine per call. The actor owns it: release, when the shard runs dry,
// ends the idle goroutines; stop, when the actor stops, ends every one as
// it goes idle.
type callPool struct {
	// holds is set once the shard's handler held a call: its calls start
	// on the window's run then, not on the pool's goroutines.
	holds   atomic.Bool
	mu      sync.Mutex        // guards what follows
	idle    []chan *groupCall // each an idle goroutine's (cap 1)
	stopped bool
	// spare are the call records of the last concurrent window, zeroed,
	// for the next one: a window of a hundred calls needs tens of KiB of
	// them, which a busy shard would otherwise allocate for every window.
	spare []groupCall
}

// takeCalls returns n zeroed call records, the spare ones when they are
// enough.
func (p *callPool) takeCalls(n int) []groupCall {
	p.mu.Lock()
	spare := p.spare
	if cap(spare) >= n {
		p.spare = nil
	}
	p.mu.Unlock()
	if cap(spare) < n {
		return make([]groupCall, n)
	}
	return spare[:n]
}

// putCalls keeps calls, whose calls all returned and whose outcomes were
// copied, zeroed for the next window.
func (p *callPool) putCalls(calls []groupCall) {
	clear(calls)
	p.mu.Lock()
	if cap(calls) > cap(p.spare) {
		p.spare = calls[:0]
	}
	p.mu.Unlock()
}

// run runs gc on an idle goroutine, or on a new one.
func (p *callPool) run(gc *groupCall) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- gc
		return
	}
	p.mu.Unlock()
	go p.loop(gc)
}

// loop runs gc, then what run hands it while it is idle, until released.
func (p *callPool) loop(gc *groupCall) {
	ch := make(chan *groupCall, 1)
	for ok := true; ok; gc, ok = <-ch {
		gc.do()
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, ch)
		p.mu.Unlock()
	}
}

// release ends the idle goroutines.
func (p *callPool) release() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.spare = nil, nil
	p.mu.Unlock()
	for _, ch := range idle {
		close(ch)
	}
}

// stop ends the idle goroutines, and the others once their call returns.
func (p *callPool) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.release()
}
