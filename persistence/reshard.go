package persistence

import (
	"context"
	"errors"
	"strconv"
)

// Errors of online resharding (docs/contract.md §3.17).
var (
	// ErrReshardRunning is returned by Reshard while a reshard of the queue
	// runs: one at a time.
	ErrReshardRunning = errors.New("persistence: a reshard of the queue is running")

	// ErrResharding is returned by an operation on one id (an action, a
	// state write) whose shard a reshard is draining: the id's data is on
	// its way to its new shard. Nothing was changed; retry shortly.
	ErrResharding = errors.New("persistence: the id's shard is being resharded, retry shortly")
)

// ShardRange is one generation of a queue's shards: shards Base to
// Base+Count-1. An id's shard in it is Base + ShardOf(id, Count).
type ShardRange struct {
	// Gen numbers the queue's generations from 1 (the shards a queue was
	// created with); each reshard starts the next one.
	Gen int
	// Base is the number of the generation's first shard.
	Base int
	// Count is how many shards the generation has.
	Count int
}

// Shard returns the shard of id in the generation.
func (r ShardRange) Shard(id string) int { return r.Base + ShardOf(id, r.Count) }

// Contains reports whether shard is one of the generation's.
func (r ShardRange) Contains(shard int) bool { return shard >= r.Base && shard < r.Base+r.Count }

// Refs returns the generation's shards of queue, in order.
func (r ShardRange) Refs(queue string) []ShardRef {
	out := make([]ShardRef, r.Count)
	for i := range out {
		out[i] = ShardRef{Queue: queue, Shard: r.Base + i}
	}
	return out
}

// QueueShape is where a queue's ids live: its current generation of shards,
// which new ids go to, and while a reshard runs, the generation it drains.
type QueueShape struct {
	// Current is the generation the reshard moves ids to (the only one
	// when none runs). Its Count is the queue's shard count.
	Current ShardRange
	// From is the generation a running reshard drains (Count 0: none).
	// An id stays in its shard of From until that shard is drained.
	From ShardRange
}

// Resharding reports whether a reshard runs.
func (s QueueShape) Resharding() bool { return s.From.Count > 0 }

// Refs returns every shard of queue that may hold ids: those of Current and,
// while a reshard runs, those of From, in shard order.
func (s QueueShape) Refs(queue string) []ShardRef {
	refs := s.Current.Refs(queue)
	if s.Resharding() {
		refs = append(s.From.Refs(queue), refs...)
		if s.From.Base > s.Current.Base {
			refs = append(s.Current.Refs(queue), s.From.Refs(queue)...)
		}
	}
	return refs
}

// Contains reports whether shard is one of Current's or From's.
func (s QueueShape) Contains(shard int) bool {
	return s.Current.Contains(shard) || s.Resharding() && s.From.Contains(shard)
}

// String spells the shape as the store keeps it: "<count>" for a queue
// never resharded, else "<gen>,<base>,<count>", followed while a reshard
// runs by ";" and From the same way.
func (s QueueShape) String() string {
	if s.Current.Gen <= 1 && s.Current.Base == 0 && !s.Resharding() {
		return strconv.Itoa(s.Current.Count)
	}
	out := formatRange(s.Current)
	if s.Resharding() {
		out += ";" + formatRange(s.From)
	}
	return out
}

func formatRange(r ShardRange) string {
	return strconv.Itoa(r.Gen) + "," + strconv.Itoa(r.Base) + "," + strconv.Itoa(r.Count)
}

// DrainResult is what one DrainShard step did.
type DrainResult struct {
	// Moved counts the ids whose queued jobs this step moved.
	Moved int
	// Done reports that the shard is drained: it holds nothing more and
	// takes no enqueue (they go to the current generation).
	Done bool
	// Outbox counts the entries of the shard's outbox that must be relayed
	// before the shard can be drained (the step moved nothing then).
	Outbox int
}

// ReshardStatus is how far a queue's reshard got.
type ReshardStatus struct {
	// Shape is the queue's shape; Shape.Resharding() tells whether a
	// reshard runs (the fields below are zero when none does).
	Shape QueueShape
	// Moved counts the ids whose queued jobs left the drained shards so
	// far (an id moved in parts counts once per part).
	Moved int64
	// Left counts the ids still queued in the drained shards.
	Left int64
	// Drained counts the drained generation's shards that are drained.
	Drained int
}

// Resharder changes a queue's shard count while nodes serve it and
// producers enqueue (docs/contract.md §3.17, docs/storage.md section 11).
type Resharder interface {
	// Shape returns where the queue's ids live; ErrUnknownQueue for a
	// queue never registered.
	Shape(ctx context.Context, queue string) (QueueShape, error)
	// Shapes returns the shapes of the named queues, in order, in one
	// round trip; ErrUnknownQueue when one was never registered.
	Shapes(ctx context.Context, queues ...string) ([]QueueShape, error)
	// Reshard starts moving the queue to shards shards and returns the new
	// shape. The shards of the current generation are drained into the
	// new one by their owners (DrainShard); enqueues keep going to an
	// id's old shard until it is drained. ErrReshardRunning while a
	// reshard runs; a count equal to the current one changes nothing.
	// Subscribers of the queue get a ControlsNotice when a reshard starts
	// and when it ends (FinishReshard).
	Reshard(ctx context.Context, queue string, shards int) (QueueShape, error)
	// DrainShard is one step of draining the shard of lease, which a
	// reshard drains (AdvanceResult.Draining): it moves the ids of up to
	// limit queued jobs (with their payloads, state, timers, morgue
	// entries and finished records) to their shards of the new generation,
	// and once nothing is left, seals the shard and hands its counters and
	// marks over. ErrLeaseLost when the lease is no longer the shard's.
	DrainShard(ctx context.Context, lease Lease, limit int) (DrainResult, error)
	// ReshardStatus reports the queue's shape and, while a reshard runs,
	// its progress.
	ReshardStatus(ctx context.Context, queue string) (ReshardStatus, error)
	// FinishReshard ends the queue's reshard when every shard of the
	// drained generation is drained, and reports whether the queue now has
	// one generation.
	FinishReshard(ctx context.Context, queue string) (bool, error)
}
