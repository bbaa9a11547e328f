package orderly

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/persistence"
)

// CrashNodeActor arms n (before Start) so that the returned function makes
// its node actor panic once, as a bug in it would.
func CrashNodeActor(n *Node) (crash func()) {
	var armed atomic.Bool
	n.eng.WrapNodeProps(func(p *actor.Props) *actor.Props {
		return p.Configure(actor.WithReceiverMiddleware(func(next actor.ReceiverFunc) actor.ReceiverFunc {
			return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
				if armed.CompareAndSwap(true, false) {
					panic("a bug in the node actor")
				}
				next(c, env)
			}
		}))
	})
	return func() {
		armed.Store(true)
		n.eng.SendNodeActor(node.Notice{Ref: persistence.ShardRef{Queue: "none"}})
	}
}

// DesyncNodeActor tells n's node actor to serve nothing behind the
// facade's back, as a node actor that lost its assignment would.
func DesyncNodeActor(n *Node) { n.eng.SendNodeActor(node.Assign{}) }

// StopEnqueueActor stops n's enqueue actor from inside the process, as its
// guardian does when it gives up restarting it, and waits until it stopped.
func StopEnqueueActor(n *Node) { n.eng.StopEnqueueActor() }

// NeverServe makes n never serve the given shards, neither as its share of
// the placement nor adopted: a member whose view of the cluster disagrees
// with the others', so that they count it as serving shards it does not
// serve.
func NeverServe(n *Node, refs ...persistence.ShardRef) { n.eng.NeverServe(refs...) }

// ServeAgain ends NeverServe: n serves its whole share of the placement
// from now on.
func ServeAgain(n *Node) { n.eng.NeverServe() }

// SetControlPoll sets how often n (before Start) reads the queue controls
// without a notice; a very long poll leaves the notice as the only way a
// change made through another node reaches n.
func SetControlPoll(n *Node, d time.Duration) { n.eng.SetControlPoll(d) }

// WithTransport makes a cluster member gossip through t.
func WithTransport(c *ClusterConfig, t memberlist.Transport) *ClusterConfig {
	c.transport = t
	return c
}

// AskEnqueueActor hands msg, of any type, to n's enqueue actor and returns
// its answer.
func AskEnqueueActor(ctx context.Context, n *Node, msg any) (any, error) { return n.eng.Ask(ctx, msg) }
