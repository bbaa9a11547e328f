package client

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// State is an id's state in a stateful queue (docs/contract.md §11): opaque
// bytes and a version that grows by one with each change (0: no state
// ever; a deleted state keeps its version, Deleted set).
type State = persistence.State

// ErrVersionConflict is returned by SetState and DeleteState when the
// expected version is no longer the current one.
var ErrVersionConflict = persistence.ErrVersionConflict

// GetState reads the state of id in a stateful queue.
func (c *Client) GetState(ctx context.Context, queue, id string) (State, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.store.GetState(ctx, queue, id)
	if err != nil {
		return State{}, fmt.Errorf("client: %w", err)
	}
	return st, nil
}

// SetState writes the state of id if its version is still expected (0: it
// has none) and returns the new version; otherwise it fails with
// ErrVersionConflict and writes nothing. A handler call running for id
// then commits nothing for it, and id is handed over again with this state.
// data is at most persistence.DefaultMaxStateBytes (the queue's
// max_state_bytes is checked by the nodes' HTTP API, not here).
func (c *Client) SetState(ctx context.Context, queue, id string, data []byte, expected int64) (int64, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.store.SetState(ctx, queue, id, data, expected, 0)
	if err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	return v, nil
}

// DeleteState deletes the state of id if its version is still expected
// (ErrVersionConflict otherwise), and reports whether there was one. The id
// keeps a tombstone one version up: its version never goes back.
func (c *Client) DeleteState(ctx context.Context, queue, id string, expected int64) (bool, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	ok, err := c.store.DeleteState(ctx, queue, id, expected)
	if err != nil {
		return false, fmt.Errorf("client: %w", err)
	}
	return ok, nil
}

func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.Timeout)
}

// FeedEntry is one committed state change of a stateful queue's change
// feed (docs/contract.md §11).
type FeedEntry = persistence.FeedEntry

// feedWait is how long one read of Feed waits for new entries before it
// asks again. The store ends a waiting read soon after its context ends
// (redisstore.FeedWaitSlice), so Feed returns promptly when ctx ends.
var feedWait = 2 * time.Second

// Feed follows the change feed of a stateful queue from a position:
// persistence.FeedOldest ("0", the oldest kept), persistence.FeedNew ("$",
// only changes after the call) or an entry's Pos (what follows it). It
// yields entries in feed order, waiting for new ones, until ctx ends or the
// loop stops; a read error is yielded once and ends the sequence (resume
// from the last entry's Pos); it ends soon after ctx does. Per id, entries
// come in version order; the feed is at least once: dedupe by (ID,
// Version).
func (c *Client) Feed(ctx context.Context, queue, from string) iter.Seq2[FeedEntry, error] {
	return func(yield func(FeedEntry, error) bool) {
		if from == "" {
			from = persistence.FeedOldest
		}
		for ctx.Err() == nil {
			entries, next, err := c.store.ReadFeed(ctx, queue, from, 100, feedWait)
			if err != nil {
				if ctx.Err() == nil {
					yield(FeedEntry{}, fmt.Errorf("client: read the change feed of %s: %w", queue, err))
				}
				return
			}
			from = next
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}
