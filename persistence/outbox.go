package persistence

import (
	"context"
	"fmt"
)

// Emits and the per-shard outbox (docs/contract.md §11).

// MaxEmitsPerID is the most jobs one handler call may emit for one id; more
// fail the id.
const MaxEmitsPerID = 1000

// Emit is a job a handler call emits on behalf of the id From of its batch:
// committed into the shard's outbox in the same atomic step as From's
// acknowledgement (dropped with a failed, conflicting or restored id), then
// enqueued into Queue by the relay, at least once.
type Emit struct {
	// From is the id of the settled batch the emit belongs to.
	From string
	// Queue is the target queue, any queue (the relay enqueues it on the
	// target's shard through the normal enqueue path).
	Queue string
	// Job is the job to enqueue. A zero PerformAt means "now" when the
	// relay enqueues it; a nil Score the relay's default score.
	Job NewJob
}

// ValidateEmit returns a *FieldError when e cannot be enqueued: an invalid
// queue name or a bad job (payload over maxPayload bytes, bad id or time,
// a dedup key, which emitted jobs do not carry).
func ValidateEmit(e Emit, maxPayload int) error {
	if err := ValidateQueueName(e.Queue); err != nil {
		return &FieldError{Field: "emit.queue", Index: -1, Reason: err.Error()}
	}
	if err := ValidateJobs([]NewJob{e.Job}, maxPayload); err != nil {
		return fmt.Errorf("emit to %s: %w", e.Queue, err)
	}
	if e.Job.DedupKey != "" {
		// The outbox entry keeps no key (docs/contract.md §3.12).
		return &FieldError{Field: "emit.dedup_key", Index: -1, Reason: "an emitted job carries no dedup key"}
	}
	return nil
}

// OutboxStore relays a shard's outbox (docs/storage.md section 10), part of
// ShardStore. The shard's owner calls it after an Advance reports entries
// (AdvanceResult.Outbox) and once after acquiring the shard; calls may
// overlap with another node's relay of the same shard (a previous owner
// still at work), and with an outside compare-and-set's relay: entries are
// removed by their ids, so an emit is relayed at least once and removed
// once, and a state change is published on the change feed once, in
// outbox order (the redisstore feed mark).
type OutboxStore interface {
	// RelayOutbox enqueues up to limit of the oldest entries of the shard's
	// outbox into their targets (emits into their queues, state changes
	// onto the queue's change feed), then removes them, and returns how
	// many it relayed and whether entries remain. An entry whose target queue
	// does not exist (never registered) is removed without being relayed
	// and counted in dropped.
	RelayOutbox(ctx context.Context, ref ShardRef, limit int) (relayed, dropped int, more bool, err error)
}
