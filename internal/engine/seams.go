package engine

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/persistence"
)

// Test seams: the root package's tests reach them through its
// export_test.go. Production code calls none of them.

// WrapNodeProps adjusts the node actor's props before Start spawns it.
func (e *Engine) WrapNodeProps(wrap func(*actor.Props) *actor.Props) { e.wrapNodeProps = wrap }

// SendNodeActor sends msg to the node actor, behind the engine's back.
func (e *Engine) SendNodeActor(msg any) { e.tellNodeActor(msg) }

// StopEnqueueActor stops the enqueue actor from inside the process, as its
// guardian does when it gives up restarting it, and waits until it stopped.
func (e *Engine) StopEnqueueActor() {
	e.mu.Lock()
	sys, pid := e.sys, e.enqPID
	e.mu.Unlock()
	_ = sys.Root.StopFuture(pid).Wait()
}

// NeverServe makes the node never serve the given shards, neither as its
// share of the placement nor adopted; nil ends it, and the node serves its
// whole share and adopted shards again at once.
func (e *Engine) NeverServe(refs ...persistence.ShardRef) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.never = map[persistence.ShardRef]bool{}
	for _, r := range refs {
		e.never[r] = true
	}
	if e.placed {
		e.assignLocked(e.share, e.adopted)
	}
}

// SetControlPoll sets how often the queue controls are read without a
// notice; before Start.
func (e *Engine) SetControlPoll(d time.Duration) { e.controls.poll = d }
