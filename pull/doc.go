// Package pull serves a queue's batches to pull workers (docs/contract.md
// §6.6): processes that ask the node for work over HTTP instead of
// receiving webhooks.
//
// The node stays the shard owner. A pull queue's handler (Broker.Handler)
// hands each call's batch to the Broker and blocks; a worker's pull
// (Broker.Pull) takes the waiting calls, as many whole calls as its max_ids
// allows, under one lease, the worker answers (Broker.Answer) with a
// webhook answer, and each call returns its own ids' part of that answer as
// its outcome, which the shard actor commits as it commits any handler's.
// The answer applies each call's part itself and wakes the call, so that it
// does not wait for every call of the lease to be scheduled; a call whose
// context ended before the answer took it refuses its part.
//
// The calls of a concurrent window (orderly.Worker.ConcurrentCalls above
// 1; a pull queue of the orderly binary runs every call of a window at
// once) are held instead of blocking: the node hands each with a context
// the broker recognizes, the handler returns at once, and the broker ends
// the call when an answer took it, its lease's deadline passed, an id of
// it was cancelled, the window's deadline context ended, or the Broker
// stopped. No goroutine waits per call, and the broker watches a window's
// deadline context once for all its calls. A middleware of the node
// (orderly.Config.Middleware) wraps the hand-over, not the wait for the
// worker (otelorderly's ends its span when the call ends); the node's
// Observer hears of each call when it ended.
//
// A call's batch is handed to one pull only, and a call is never split, so
// at most one worker holds an id. A lease has its own
// deadline (Options.Lease after the pull), which Extend moves, never past
// the call's deadline (the queue's timeout, the bound the store keeps with
// the in-flight record). When the lease deadline passes the call fails its
// ids (a timeout, retried by the queue's retry policy); when the call's
// context ends (its deadline, the shard lost, the drain deadline) its part
// of the lease ends with it, and the lease once none of its calls is left. An answer to an ended lease commits nothing and is refused
// with a *LeaseError naming why.
//
// A call no worker pulls gives its ids back untouched (orderly.Snooze(0))
// one lease before its own deadline, so that a pull always gets a full
// lease, and at once when the Broker stops.
package pull
