package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/orderlyhq/orderly/persistence"
)

// ReshardStatus is how far a queue's reshard got (docs/contract.md §3.17):
// its shape (Shape.Current.Count is the shard count new ids use,
// Shape.Resharding() whether a reshard runs) and, while one runs, the ids
// moved and left.
type ReshardStatus = persistence.ReshardStatus

// errNoReshard is the error of a store that cannot reshard a queue.
var errNoReshard = errors.New("client: the store cannot reshard a queue")

// Reshard starts changing the queue's shard count to shards while nodes
// serve it and producers enqueue (docs/contract.md §3.17), and returns the
// reshard's progress. The nodes serving the queue move its ids by
// themselves; ReshardStatus follows them. Asking again for the running
// reshard's count changes nothing; another count while one runs is
// persistence.ErrReshardRunning; the queue's current count with none
// running changes nothing (the status shows no reshard). A bad count is a
// *persistence.FieldError, an unknown queue persistence.ErrUnknownQueue.
func (c *Client) Reshard(ctx context.Context, queue string, shards int) (ReshardStatus, error) {
	rs, ok := c.store.(persistence.Resharder)
	if !ok {
		return ReshardStatus{}, errNoReshard
	}
	if err := persistence.ValidateShards(shards); err != nil {
		return ReshardStatus{}, fmt.Errorf("client: reshard %s: %w", queue, err)
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if _, err := rs.Reshard(ctx, queue, shards); err != nil {
		return ReshardStatus{}, fmt.Errorf("client: reshard %s: %w", queue, err)
	}
	st, err := rs.ReshardStatus(ctx, queue)
	if err != nil {
		return ReshardStatus{}, fmt.Errorf("client: reshard %s: read its progress: %w", queue, err)
	}
	return st, nil
}

// ReshardStatus reports the queue's shape and, while a reshard runs, its
// progress: Moved counts the ids whose jobs left the drained shards so
// far, Left those still queued in them.
func (c *Client) ReshardStatus(ctx context.Context, queue string) (ReshardStatus, error) {
	rs, ok := c.store.(persistence.Resharder)
	if !ok {
		return ReshardStatus{}, errNoReshard
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := rs.ReshardStatus(ctx, queue)
	if err != nil {
		return ReshardStatus{}, fmt.Errorf("client: reshard status of %s: %w", queue, err)
	}
	return st, nil
}
