package persistence

import (
	"context"
	"time"
)

// Store is a complete store: every role below. Every method of every role
// is safe for concurrent use; calls may block on the network and honour
// ctx. Every method that changes state is atomic per shard: it happens
// completely or not at all.
//
// The roles follow the callers, so that a second implementation can be
// built and checked (persistence/storetest) in steps: first what a node
// needs (NodeStore) and the reads the conformance suite checks results
// with (Inspector); then the operators' actions (Admin); then the
// stateful queues' outside access (StateStore, FeedStore), whose cases the
// suite skips for a store without them.
//
//   - producers (the client, the HTTP enqueue endpoint, the node's enqueue
//     actor) call Producer;
//   - the owner of a shard (a shard actor) calls ShardStore, presenting its
//     lease's token, and its node polls its idle shards with it; a call
//     with a stale token fails with ErrLeaseLost and changes nothing;
//   - a node also calls QueueStore and ControlStore (its queues, their
//     notifications, controls and periodic jobs), Ping, StoreID and Warm;
//   - operators (the HTTP API, the dashboard, the CLI) call Inspector,
//     Admin, StateStore and FeedStore, and some of the above.
type Store interface {
	NodeStore
	Inspector
	Admin
	StateStore
	FeedStore
	FinishedStore
}

// NodeStore is what a node needs (orderly.NewNode): its producers', its
// shards' and its queue-wide calls. A wrapper that embeds it (metrics,
// fault injection) keeps every method a node looks for.
type NodeStore interface {
	Producer
	ShardStore
	QueueStore
	ControlStore

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error

	// Identifier gives the store's identity, which nodes advertise: a
	// required method, so that no wrapper of the store can hide it.
	Identifier

	// Warm opens up to conns connections to the store ahead of use, so
	// that a node's first lease calls do not wait for a connection's
	// handshake. A store without a connection pool returns nil.
	Warm(ctx context.Context, conns int) error
}

// Producer adds jobs to queues.
type Producer interface {
	// Enqueue validates every job (a *FieldError names the first bad one,
	// and nothing is written), then adds them to the queue, merging with
	// queued jobs of the same id (docs/contract.md §3.2). It returns once
	// the jobs are in the store. Owners of the shards touched are notified.
	Enqueue(ctx context.Context, queue string, jobs []NewJob) error
}

// EnqueueReporter is a Producer that also reports what an enqueue did
// (duplicates under a dedup window, docs/contract.md §3.12). Enqueue is
// EnqueueReport without the report.
type EnqueueReporter interface {
	EnqueueReport(ctx context.Context, queue string, jobs []NewJob) (EnqueueResult, error)
}

// EnqueueReport enqueues jobs with p, reporting duplicates when p is an
// EnqueueReporter; another Producer is called with Enqueue and reports
// none (the jobs are deduplicated all the same).
func EnqueueReport(ctx context.Context, p Producer, queue string, jobs []NewJob) (EnqueueResult, error) {
	if r, ok := p.(EnqueueReporter); ok {
		return r.EnqueueReport(ctx, queue, jobs)
	}
	return EnqueueResult{}, p.Enqueue(ctx, queue, jobs)
}

// ShardStore is what the owner of a shard calls (docs/contract.md §3.3 to
// §3.8): a lease, the settle-and-fetch step, the morgue's retention and the
// outbox's relay, and the idle poll its node makes for all its shards.
type ShardStore interface {
	// AcquireShard takes the shard's lease for ttl on behalf of owner, or
	// fails with ErrLeaseHeld. In the same atomic step it restores the
	// shard's in-flight record, if any, into the queue (docs/contract.md
	// §3.7); the number of ids restored is returned.
	AcquireShard(ctx context.Context, ref ShardRef, owner string, ttl time.Duration) (Lease, int, error)
	// RenewShard extends the lease to ttl from now, or fails with
	// ErrLeaseLost.
	RenewShard(ctx context.Context, lease Lease, ttl time.Duration) error
	// RenewShards renews several leases together (one round trip, or one
	// per server of a clustered store), each fenced on its own: the error
	// at index i is RenewShard's for leases[i].
	RenewShards(ctx context.Context, leases []Lease, ttl time.Duration) []error
	// PollShards reports, for each shard of refs in order, whether its
	// owner's Advance could find work in it now: due jobs (due retries and
	// jobs whose perform_at came included), due timers, outbox entries to
	// relay, or what an Advance tidies up (an in-flight record, an
	// unconfirmed dead report, data of the previous storage layout). The
	// answer is a superset: a shard reported may have nothing to hand over
	// by the time its owner looks, but a shard with work is never left out,
	// and a shard whose keys cannot be read alone (a queue no longer
	// registered) is reported, so that its owner's Advance meets the error.
	// It only reads, needs no lease, and costs one round trip (one per
	// server of a clustered store) however many shards it names: a node
	// polls its idle shards with it instead of one Advance each.
	PollShards(ctx context.Context, refs []ShardRef) ([]bool, error)
	// ReleaseShard gives the lease up, first restoring an unsettled
	// in-flight record into the queue. Releasing a lease that was already
	// lost returns ErrLeaseLost and changes nothing.
	ReleaseShard(ctx context.Context, lease Lease) error
	// Advance settles the caller's in-flight batch and fetches the next one,
	// in one atomic step (docs/contract.md §3.3 to §3.6).
	Advance(ctx context.Context, lease Lease, req AdvanceRequest) (AdvanceResult, error)
	// TrimMorgue deletes up to limit morgue entries of the shard last
	// updated before the given time (docs/contract.md §3.8, retention).
	TrimMorgue(ctx context.Context, ref ShardRef, before time.Time, limit int) (int, error)
	// TrimFinished deletes up to limit finished records of the shard
	// (docs/contract.md §3.14) finished before the given time, and the
	// attempt histories of ids that last failed before it; the shard's
	// owner calls it for a queue with retain_finished. A store that keeps
	// no finished records returns 0.
	TrimFinished(ctx context.Context, ref ShardRef, before time.Time, limit int) (int, error)

	// OutboxStore relays emits committed by handler calls into their
	// target queues (docs/contract.md §11).
	OutboxStore
}

// QueueStore is what a node and an operator read and register about queues
// as a whole.
type QueueStore interface {
	// RegisterQueue records a queue and its shard count, or checks that an
	// existing queue has the same count (ErrShardCountMismatch otherwise);
	// a queue resharded since (docs/contract.md §3.17) keeps the store's
	// shards whatever the count.
	RegisterQueue(ctx context.Context, spec QueueSpec) error
	// Queues lists the registered queues by name.
	Queues(ctx context.Context) ([]QueueSpec, error)
	// Stats returns the metrics of each named queue, in order
	// (docs/contract.md §3.10).
	Stats(ctx context.Context, queues ...string) ([]QueueStats, error)
	// ShardOwners returns who holds the lease of each shard of the queue.
	ShardOwners(ctx context.Context, queue string) ([]ShardOwner, error)
	// Subscribe returns a subscription to enqueue notifications of the named
	// queues: after an enqueue (or a morgue requeue) the shard touched is
	// sent on C, and after SetPaused a ControlsNotice. Notifications are
	// hints: they may be dropped when the receiver is slow or the
	// connection drops, never invented.
	Subscribe(ctx context.Context, queues ...string) (Subscription, error)
}

// ControlStore keeps the queue-wide controls and the periodic jobs' ticks
// every node reads (docs/contract.md §9).
type ControlStore interface {
	// SetPaused pauses or resumes the queue cluster-wide: a paused queue
	// accepts enqueues, and no node starts a handler call of it. The state
	// is kept in the store, then subscribers of the queue get a
	// ControlsNotice; ErrUnknownQueue for a queue never registered.
	SetPaused(ctx context.Context, queue string, paused bool) error
	// Controls returns the queue-wide controls of each named queue, in
	// order, in one round trip (one per server of a clustered store). A
	// queue never paused reads as the zero QueueControl, registered or not.
	Controls(ctx context.Context, queues ...string) ([]QueueControl, error)
	// SetPermits sets how many of the queue's limit cluster-wide permits
	// (max_concurrency) holder has: up to want, as many as the other
	// holders leave free, each valid for ttl; it returns how many the
	// holder has now. Expired permits of any holder are dropped first, so
	// those of a dead holder come back within ttl; want 0 releases the
	// holder's permits. Holders call it again within ttl to keep theirs.
	SetPermits(ctx context.Context, queue, holder string, want, limit int, ttl time.Duration) (int, error)
	// TakeTokens takes up to want tokens from the queue's token bucket
	// (rate_limit), which refills at perSecond up to burst on the store's
	// clock. It returns how many it took and, when none, how long until
	// the next token.
	TakeTokens(ctx context.Context, queue string, want int, perSecond float64, burst int) (int, time.Duration, error)
	// EnqueueTick enqueues job into queue as the periodic job name's tick,
	// unless a tick of name at or after tick was already enqueued on the
	// job's shard: the check and the enqueue are one atomic step, so each
	// tick is enqueued once however many nodes, or retries after a lost
	// reply, try it. It reports whether this call enqueued it. Ticks count
	// in milliseconds.
	EnqueueTick(ctx context.Context, queue, name string, tick time.Time, job NewJob) (bool, error)
	// AdvanceTick moves the named periodic job's last tick, the one nodes
	// show and count missed ticks from, to tick if it is earlier (or
	// unset), and reports whether it did. Nodes move it after EnqueueTick,
	// which alone decides whether a tick is enqueued. Ticks count in
	// milliseconds.
	AdvanceTick(ctx context.Context, name string, tick time.Time) (bool, error)
	// LastTicks returns the last tick of each named periodic job, in
	// order; the zero time for one that never ticked.
	LastTicks(ctx context.Context, names ...string) ([]time.Time, error)
}

// Inspector reads a queue's jobs, in-flight batches and morgue: what the
// HTTP API and the dashboard show, and what the conformance suite checks
// results with.
type Inspector interface {
	// ListJobs returns a page of queued jobs.
	ListJobs(ctx context.Context, queue string, opts ListOptions) (JobPage, error)
	// GetJob looks one id up: queued, in flight, and on a stateful queue
	// its state (a deleted one as a tombstone with its version) and timer;
	// ErrNotFound when the id has none of these.
	GetJob(ctx context.Context, queue, id string) (JobInfo, error)
	// Processing returns the in-flight batches of the queue's shards.
	Processing(ctx context.Context, queue string) ([]InFlightBatch, error)
	// ListMorgue returns a page of morgue entries.
	ListMorgue(ctx context.Context, queue string, opts ListOptions) (MorguePage, error)
}

// Admin is the operators' actions on queued jobs and morgue entries
// (docs/contract.md §3.8, §3.9).
type Admin interface {
	// DeleteJob deletes the queued entry of id (not an in-flight one) and
	// reports whether there was one.
	DeleteJob(ctx context.Context, queue, id string) (bool, error)
	// PerformJobNow makes the queued entry of id due now, keeping its
	// retry count and error, and reports whether there was one. An
	// in-flight batch of the id is not touched (docs/contract.md §3.9).
	PerformJobNow(ctx context.Context, queue, id string) (bool, error)
	// KillJob moves every queued payload of id to the morgue, with the
	// job's last error, and reports whether there was a queued entry. An
	// in-flight batch of the id is not touched (docs/contract.md §3.9).
	KillJob(ctx context.Context, queue, id string) (bool, error)
	// CancelJob cancels id (docs/contract.md §3.13): its queued payloads go
	// to the morgue (CancelKill) or are dropped (CancelDelete) and, when a
	// handler call holds it, the in-flight record marks it so that its
	// settle disposes of it the same way unless the call succeeded; then a
	// CancelNotice tells the node running the call to cancel it. A cancel
	// of an id neither queued nor in flight changes nothing and reports
	// so; cancelling again is harmless.
	CancelJob(ctx context.Context, queue, id string, mode CancelMode) (CancelResult, error)
	// PerformAllNow makes every queued job of the queue due now.
	PerformAllNow(ctx context.Context, queue string) (int, error)
	// KillFailed moves every queued job with retry count >= 0 to the morgue
	// with all its payloads.
	KillFailed(ctx context.Context, queue string) (int, error)
	// DeleteFailed deletes every queued job with retry count >= 0.
	DeleteFailed(ctx context.Context, queue string) (int, error)

	// RequeueMorgue puts the named morgue entries back in the queue (merge
	// case 3: perform_at now, retry count -1); unknown ids are skipped. It
	// returns how many were requeued.
	RequeueMorgue(ctx context.Context, queue string, ids []string) (int, error)
	// RequeueMorgueAll requeues every morgue entry of the queue.
	RequeueMorgueAll(ctx context.Context, queue string) (int, error)
	// DeleteMorgue deletes the named morgue entries.
	DeleteMorgue(ctx context.Context, queue string, ids []string) (int, error)
	// DeleteMorgueAll empties the queue's morgue.
	DeleteMorgueAll(ctx context.Context, queue string) (int, error)
}

// QueueControl is the queue-wide state every node reads (docs/contract.md
// §9).
type QueueControl struct {
	// Paused: no node starts a handler call of the queue.
	Paused bool
}

// ControlsNotice is the Shard of a notification that names no shard: the
// queue's controls (docs/contract.md §9: pause, resume) changed, and a
// node reads them again at once instead of at its next poll.
const ControlsNotice = -1

// Subscription delivers enqueue notifications until Close.
type Subscription interface {
	// C delivers the shards that received jobs, and ShardRef{Queue: q,
	// Shard: ControlsNotice} after a change of q's controls. It is closed
	// by Close.
	C() <-chan ShardRef
	// Close ends the subscription; it is safe to call more than once.
	Close() error
}

// FinishedStore lists the finished records of queues with retain_finished
// (docs/contract.md §3.14), which the settle writes (AdvanceRequest.
// RetainFinished) and the shard's owner trims (ShardStore.TrimFinished).
type FinishedStore interface {
	// ListFinished returns a page of the queue's finished records, by
	// finished_at (ties by id; opts.Order "" or OrderFinishedAt, Rev for
	// the latest first) or by id (OrderID; a page reads every finished id
	// of each shard, at most max_finished), merged across the shards; Min
	// and Max bound finished_at (unix seconds) or the ids.
	ListFinished(ctx context.Context, queue string, opts ListOptions) (FinishedPage, error)
}
