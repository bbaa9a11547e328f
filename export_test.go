package orderly

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/persistence"
)

// CrashNodeActor arms n (before Start) so that the returned function makes
// its node actor panic once, as a bug in it would.
func CrashNodeActor(n *Node) (crash func()) {
	var armed atomic.Bool
	n.wrapNodeProps = func(p *actor.Props) *actor.Props {
		return p.Configure(actor.WithReceiverMiddleware(func(next actor.ReceiverFunc) actor.ReceiverFunc {
			return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
				if armed.CompareAndSwap(true, false) {
					panic("a bug in the node actor")
				}
				next(c, env)
			}
		}))
	}
	return func() {
		armed.Store(true)
		n.mu.Lock()
		sys, pid := n.sys, n.nodePID
		n.mu.Unlock()
		sys.Root.Send(pid, node.Notice{Ref: persistence.ShardRef{Queue: "none"}})
	}
}

// DesyncNodeActor tells n's node actor to serve nothing behind the
// facade's back, as a node actor that lost its assignment would.
func DesyncNodeActor(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sys.Root.Send(n.nodePID, node.Assign{})
}

// StopEnqueueActor stops n's enqueue actor from inside the process, as its
// guardian does when it gives up restarting it, and waits until it stopped.
func StopEnqueueActor(n *Node) {
	n.mu.Lock()
	sys, pid := n.sys, n.enqPID
	n.mu.Unlock()
	_ = sys.Root.StopFuture(pid).Wait()
}

// NeverServe makes n (before Start) never serve the given shards, neither
// as its share of the placement nor adopted: a member whose view of the
// cluster disagrees with the others', so that they count it as serving
// shards it does not serve.
func NeverServe(n *Node, refs ...persistence.ShardRef) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.never = map[persistence.ShardRef]bool{}
	for _, r := range refs {
		n.never[r] = true
	}
}

// ServeAgain ends NeverServe: n serves its whole share of the placement
// from now on.
func ServeAgain(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.never = nil
	n.assignLocked(n.share)
}

// SkipRelay makes n (before Start) never relay its shards' outboxes, as a
// node that dies between committing emits and relaying them: the next
// owner of each shard relays them.
func SkipRelay(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noRelay = true
}

// SetControlPoll sets how often n (before Start) reads the queue controls
// without a notice; a very long poll leaves the notice as the only way a
// change made through another node reaches n.
func SetControlPoll(n *Node, d time.Duration) { n.controlPoll = d }
