// Package supervisor holds the named restart strategies of Orderly's actors
// and the receiver middleware that logs an actor's panic with its stack
// (protoactor logs only the reason).
//
// Supervision tree of a node:
//
//	guardian (strategy Node: restart, at most 10 times in 10 s)
//	├── node      (actors/node; supervises its children with Shards)
//	│   └── <queue>/<shard> ... (actors/shard; restarted with backoff)
//	guardian (strategy Node)
//	└── enqueue   (actors/node)
//
// The top-level actors are spawned with actor.WithGuardian(Node()), so that
// their strategy is explicit rather than protoactor's hidden default. A
// restarted node actor loses its shard actors (protoactor stops a failed
// actor's children; they release their leases) and recalls the assignment,
// controls and drain its previous instance received (the memory its props
// share), so that it serves again at once.
//
// A panicking handler is not an actor failure: the shard actor runs
// handlers off its own goroutine, recovers their panics and fails the batch.
// An actor panics only on a bug in Orderly itself; its supervisor then
// restarts it, and the new instance re-reads everything from Redis (the
// mailbox is never the source of truth).
//
// This package is the node's machinery, not a programming interface: its
// exported names serve the node runtime and may change in any release.
package supervisor

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Shard restart backoff: the n-th failure within BackoffWindow waits about
// n * InitialBackoff before the restart, so a shard actor that keeps
// crashing backs off instead of spinning.
const (
	BackoffWindow  = time.Minute
	InitialBackoff = 500 * time.Millisecond
)

// Shards is the strategy a node applies to its shard actors: restart the
// failed one only, after an exponentially growing delay.
func Shards() actor.SupervisorStrategy {
	return actor.NewExponentialBackoffStrategy(BackoffWindow, InitialBackoff)
}

// Node is the guardian strategy of the top-level actors (the node and
// enqueue actors): restart the failed actor, at most 10 times within 10
// seconds; beyond that it stops.
func Node() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, 10*time.Second, func(any) actor.Directive {
		return actor.RestartDirective
	})
}

// LogPanics returns a receiver middleware that logs a panic of the actor's
// Receive with its stack trace, then re-panics so that the supervisor sees
// the failure.
func LogPanics(log *slog.Logger) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			defer func() {
				if r := recover(); r != nil {
					log.Error("actor panicked; its supervisor restarts it",
						"actor", c.Self().String(), "message", fmt.Sprintf("%T", env.Message),
						"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					panic(r)
				}
			}()
			next(c, env)
		}
	}
}
