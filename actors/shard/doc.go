// Package shard implements the shard actor: the only thing in a cluster that
// processes the jobs of one (queue, shard), one batch at a time.
//
// This package is the node's machinery, not a programming interface: its
// exported names serve the node actor (actors/node) and the node runtime
// (internal/engine), and may change in any release. Programs use the root
// package orderly.
//
// # Protocol
//
// A shard actor owns at most one lease on its shard, at most one store call
// or handler run in flight (its phase, state.go) and, beside it, at most one
// lease renewal; it never runs a store call that could fetch while a
// handler runs. Every store call and every handler run goes off the actor's
// goroutine, and its result comes back as a message, so the actor answers
// Drain at any time. State lives in the actor and is touched only in
// Receive; after every message, step starts what comes next when nothing is
// in flight.
//
//		             ┌──────────── backoff (timerRetry) ◀── store error ──────────────┐
//		             ▼                                                                │
//		  acquiring ─lease─▶ idle ──wake/due/poll──▶ (ask permit) ──granted──▶ advancing
//		     ▲                ▲                                                   │   │
//		     │                └───────── empty fetch: permit returned ◀───────────┘   │ batch
//		 lease lost ◀── (any phase) ◀── renewal refused or lease guard                ▼
//		                                                                            running
//		          advancing (settle + fetch) ◀── permit kept (PermitGranted) ◀─────────┤ done
//		          advancing (settle only)    ◀── permit yielded (PermitWait) ◀─────────┘
//
//	  - Acquiring: AcquireShard, which also restores the previous owner's
//	    in-flight batch. ErrLeaseHeld retries when the holder's lease would
//	    expire, or at once on a Wake (a release notice); other errors back
//	    off up to 1 s.
//	  - Permits (permitState): the node grants a node-wide number of
//	    concurrent batches (PermitRequest, PermitGranted, PermitReturn,
//	    PermitWait). When a batch ends, the actor asks to keep its permit
//	    (deciding); if the node lets it, one Advance call settles the batch
//	    and fetches the next (one round trip per batch); otherwise it
//	    settles only and waits in line. Only a held permit is given back
//	    (returnPermit); a grant the actor no longer wants is given back when
//	    it arrives, so that the node's count and the actor's always agree.
//	  - Wake-ups: a Wake (an enqueue notice), a timer at the next perform_at
//	    the store reported, or a slow idle poll (IdlePoll, for notices lost
//	    while pub/sub reconnects and due work nobody announced). On a node
//	    the poll is the node's (Config.Poller, poller.go): an actor whose
//	    fetch found nothing registers with the Poller, which every IdlePoll
//	    asks the store in one Store.PollShards call which registered shards
//	    have work an Advance would find and wakes those actors only (the
//	    fetch that follows also reports the outbox); the actor deregisters
//	    when it fetches again, loses its lease, drains or stops, and arms no
//	    poll timer of its own. Without a Poller it polls itself: an Advance
//	    every IdlePoll while idle. An idle actor holds no goroutine and
//	    sends nothing itself but, without a Renewer, its lease renewals.
//	  - Failures of store calls: Advance is retried with the very same request
//	    (it is idempotent) with backoff; the permit is kept meanwhile. A
//	    window whose calls ran keeps its outcome (failures, snoozes,
//	    deaths, discards, state, timers, emits) in the actor until its
//	    settle commits: while the lease is
//	    held, only the settle is sent again (SettleObserver counts it), never
//	    the handler call; once the lease is lost, the next owner restores
//	    the ids and hands them over again.
//	  - Window (window.go): a fetch asks for Prefetch ids, and for more
//	    while the shard is busy: the window doubles after a full window
//	    whose calls ran within windowQuick, up to MaxPrefetch, halves after
//	    a short fetch and returns to Prefetch after an empty one, after slow
//	    or cut calls and on PermitWait (another shard waits: turns stay
//	    short). A window longer than Prefetch ids shares the deadline bound
//	    of a window of Prefetch ids (AdvanceRequest.MaxCalls): its calls
//	    past those start only while half a call timeout of that bound is
//	    left, and the rest is settled as skipped.
//	  - Morgue retention: TrimMorgue once after acquiring, then every
//	    minute (a tenth of a shorter morgue_ttl, at least a second).
//	  - Outbox relay (relay.go): when an Advance reports entries in the
//	    shard's outbox (emits and change feed entries committed with acks;
//	    the first Advance under a new lease always looks), RelayOutbox runs
//	    as its own phase before the next store call; a failure backs off
//	    (timerRelay) without holding processing up. A draining actor relays
//	    before it releases, unless backing off: the next owner relays.
//
// Every timer runs on the configured clock (internal/clock), so the
// protocol is tested in virtual time.
//
// # Lease
//
// The lease is renewed LeaseTTL/3 after the previous renewal was sent
// (not after its reply, so that a slow link does not space renewals out),
// with at most one renewal in flight. On a node, a Renewer sends the
// renewals of all its shards together (Config.Renewer): one
// Store.RenewShards call per LeaseTTL/3, the first LeaseTTL/3 after a
// lease's acquisition was sent at the latest, each lease fenced on its own
// and each result sent to its actor as if it had renewed alone; the send
// time of the batch dates every lease view. The actor's conservative view of its
// lease is the send time of the last successful renewal (or acquisition) +
// LeaseTTL - margin, on the monotonic clock; the margin is twice the
// slowest recent round trip of a lease call, at least LeaseTTL/6 and at
// most LeaseTTL/4. The view is checked immediately before every handler
// call, each call of a prefetched window included, so that a process that
// was paused (SIGSTOP, a GC pause, a frozen VM) starts no call under a
// lease that may be gone, even before its late guard timer fires. The
// guard timer fires when the view runs out: the lease counts as lost
// before it can expire in Redis. A renewal whose reply comes after the
// guard fired does not revive the lease: the actor releases it instead (so
// that the next owner need not wait for it to expire), once its handler
// has returned. A successful reply handled before the guard fired extends
// the view from its send time (a renewal succeeds only while the lease key
// still holds the token, so the lease never lapsed), unless even that has
// run out. A handler call running StuckGrace past its deadline is logged
// with its age, reported (Report.StuckSince) and told to a StuckObserver. Losing the lease cancels the handler's context at once; the
// batch is not settled (the next owner restores it) and the actor does not
// acquire again until the handler has returned, so two handlers never hold
// one id. A handler that ignores its context keeps the actor waiting; it
// is logged loudly every LeaseTTL.
//
// # Drain and stop
//
// Drain stops fetching; a running handler may finish until the drain
// deadline, then its context is cancelled. A later Drain may bring the
// deadline forward (a second stop signal), never back. A finished batch is
// settled; a handler call cut by the deadline is not (its ids are skipped:
// they go back to the queue with their retry count unchanged), and so is a
// window fetched after the drain began, which no call started: its ids are
// settled as skipped, due at once, rather than left to the release, which
// would hold them until their calls' deadline. Then the lease is released and the actor stops itself. A drain that cannot reach
// the store past its deadline gives up and leaves the lease to expire.
//
// On Stopping or Restarting (a parent that stops or restarts, or a stop
// without a drain) the actor cancels what runs, waits for its goroutines
// and releases a lease it still holds, so that the next actor of the shard
// serves at once. A handler that ignores its cancelled context is waited for
// one LeaseTTL at most; the actor then stops without it and leaves its lease
// to expire, since the handler may still hold the batch's ids.
//
// # Failure of the actor itself
//
// A panic in Receive or in a task is a bug; the supervisor restarts the
// actor with backoff. The old instance releases its lease (restoring its
// in-flight batch), and the new one starts from Redis. Messages of unknown
// types are logged and ignored.
package shard
