// Package shard implements the shard actor: the only thing in a cluster that
// processes the jobs of one (queue, shard), one batch at a time.
//
// # Protocol
//
// A shard actor owns at most one lease on its shard, at most one store call
// in flight and at most one handler call in flight; it never runs a store
// call that could fetch while a handler runs. Every store call and every
// handler call runs off the actor's goroutine, and its result comes back as
// a message, so the actor answers Status and Drain at any time. State lives
// in the actor and is touched only in Receive.
//
//		acquiring ──lease──▶ idle ──wake/timer/poll──▶ wants permit ──granted──▶ advancing
//		    ▲                  ▲                                                    │
//		    │                  └──────────── empty fetch (permit returned) ◀────────┤
//		    │                                                                       ▼ batch
//		 lease lost ◀──────── (any state) ◀── renew refused or lease guard      running handler
//		                                                                            │ done
//		                           advancing (settle + fetch) ◀──permit kept────────┤
//		                           advancing (settle only)    ◀──permit yielded─────┘
//
//	  - Acquiring: AcquireShard, which also restores the previous owner's
//	    in-flight batch. ErrLeaseHeld retries every LeaseTTL/10 (a handoff or a
//	    crashed owner's lease running out); other errors back off up to 1 s.
//	  - Permits: the node grants a node-wide number of concurrent batches
//	    (PermitRequest, PermitGranted, PermitReturn, PermitWait). When a batch
//	    ends, the actor asks to keep its permit; if the node lets it, one
//	    Advance call settles the batch and fetches the next (one round trip
//	    per batch); otherwise it settles only and waits for a new grant.
//	  - Wake-ups: a Wake (an enqueue notice), a timer at the next perform_at
//	    the store reported, or a slow idle poll (IdlePoll, for notices lost
//	    while pub/sub reconnects). An idle actor holds no goroutine and sends
//	    nothing but lease renewals.
//	  - Failures of store calls: Advance is retried with the very same request
//	    (it is idempotent) with backoff; the permit is kept meanwhile.
//
// # Lease
//
// The lease is renewed every LeaseTTL/3. A lease guard timer fires at
// (last successful renewal's start + LeaseTTL - LeaseTTL/6): if the lease was
// not renewed by then (Redis unreachable, network partition), the actor
// treats it as lost before it can expire. Losing the lease cancels the
// handler's context at once; the batch is not settled (the next owner
// restores it) and the actor does not acquire again until the handler has
// returned, so two handlers never hold one id. A handler that ignores its
// context keeps the actor waiting; it is logged loudly every LeaseTTL.
//
// # Drain and stop
//
// Drain stops fetching; a running handler may finish until the drain
// deadline, then its context is cancelled. A finished batch is settled; one
// cut by the deadline is not (Release restores it for the next owner, with
// its retry count unchanged). Then the lease is released and the actor stops
// itself. On Stopping (also when stopped without a drain) it cancels what
// runs and waits for its goroutines, so none survives the actor.
//
// # Failure of the actor itself
//
// A panic in Receive is a bug; the supervisor restarts the actor with
// backoff. The old instance releases its lease on Restarting (restoring its
// in-flight batch), and the new one starts from Redis.
package shard
