package client

import (
	"context"
	"fmt"
	"iter"

	"github.com/orderlyhq/orderly/persistence"
)

// The inspection API: what the HTTP API and the dashboard show, and the
// operators' actions, for Go programs, without hand-written HTTP. Each call
// goes to the store directly (one round trip, or one per server of a
// clustered store) and is bounded by Config.Timeout when ctx has no
// deadline.
type (
	// QueueSpec is a registered queue: its name and shard count.
	QueueSpec = persistence.QueueSpec
	// QueueStats are a queue's metrics (docs/contract.md §3.10).
	QueueStats = persistence.QueueStats
	// ListOptions selects a page of a listing: order, bounds, direction,
	// size and the cursor of the previous page.
	ListOptions = persistence.ListOptions
	// JobPage is one page of queued jobs; Next continues it.
	JobPage = persistence.JobPage
	// MorguePage is one page of the morgue; Next continues it.
	MorguePage = persistence.MorguePage
	// QueuedJob is a job as stored: its payloads, due time, retry count
	// and last error.
	QueuedJob = persistence.Job
	// MorgueEntry is an id in the morgue.
	MorgueEntry = persistence.MorgueEntry
	// JobInfo is what a lookup of one id finds: the queued entry, the
	// in-flight record, its state and timer.
	JobInfo = persistence.JobInfo
	// InFlightBatch is the in-flight record of one shard.
	InFlightBatch = persistence.InFlightBatch
	// FinishedJob is the record a queue with retain_finished keeps of an
	// acknowledged id: when, in how many attempts, its last errors and
	// its result (docs/contract.md §3.14).
	FinishedJob = persistence.FinishedJob
	// FinishedPage is one page of finished records; Next continues it.
	FinishedPage = persistence.FinishedPage
	// CancelResult is what Cancel did: payloads moved or dropped, and
	// whether a call in flight was marked (docs/contract.md §3.13).
	CancelResult = persistence.CancelResult
)

// Queues lists the registered queues by name.
func (c *Client) Queues(ctx context.Context) ([]QueueSpec, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	qs, err := c.store.Queues(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: list the queues: %w", err)
	}
	return qs, nil
}

// Stats returns the metrics of each named queue, in order.
func (c *Client) Stats(ctx context.Context, queues ...string) ([]QueueStats, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.store.Stats(ctx, queues...)
	if err != nil {
		return nil, fmt.Errorf("client: stats of %v: %w", queues, err)
	}
	return st, nil
}

// ListJobs returns a page of the queue's queued jobs; pass the page's Next
// as opts.Cursor for the next one, or range over Jobs.
func (c *Client) ListJobs(ctx context.Context, queue string, opts ListOptions) (JobPage, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	p, err := c.store.ListJobs(ctx, queue, opts)
	if err != nil {
		return JobPage{}, fmt.Errorf("client: list the jobs of %s: %w", queue, err)
	}
	return p, nil
}

// Jobs ranges over every queued job of the queue in opts' order, a page
// at a time (opts.Limit jobs per round trip); it stops at the first error,
// which it yields.
func (c *Client) Jobs(ctx context.Context, queue string, opts ListOptions) iter.Seq2[QueuedJob, error] {
	return pages(func(cursor string) ([]QueuedJob, string, error) {
		opts.Cursor = cursor
		p, err := c.ListJobs(ctx, queue, opts)
		return p.Jobs, p.Next, err
	}, opts.Cursor)
}

// ListMorgue returns a page of the queue's morgue.
func (c *Client) ListMorgue(ctx context.Context, queue string, opts ListOptions) (MorguePage, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	p, err := c.store.ListMorgue(ctx, queue, opts)
	if err != nil {
		return MorguePage{}, fmt.Errorf("client: list the morgue of %s: %w", queue, err)
	}
	return p, nil
}

// Morgue ranges over every morgue entry of the queue in opts' order, a
// page at a time, like Jobs.
func (c *Client) Morgue(ctx context.Context, queue string, opts ListOptions) iter.Seq2[MorgueEntry, error] {
	return pages(func(cursor string) ([]MorgueEntry, string, error) {
		opts.Cursor = cursor
		p, err := c.ListMorgue(ctx, queue, opts)
		return p.Entries, p.Next, err
	}, opts.Cursor)
}

// ListFinished returns a page of the finished records of a queue with
// retain_finished (docs/contract.md §3.14): by finished_at unless
// opts.Order is persistence.OrderID.
func (c *Client) ListFinished(ctx context.Context, queue string, opts ListOptions) (FinishedPage, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	p, err := c.store.ListFinished(ctx, queue, opts)
	if err != nil {
		return FinishedPage{}, fmt.Errorf("client: list the finished ids of %s: %w", queue, err)
	}
	return p, nil
}

// Finished ranges over every finished record of the queue in opts'
// order, a page at a time, like Jobs.
func (c *Client) Finished(ctx context.Context, queue string, opts ListOptions) iter.Seq2[FinishedJob, error] {
	return pages(func(cursor string) ([]FinishedJob, string, error) {
		opts.Cursor = cursor
		p, err := c.ListFinished(ctx, queue, opts)
		return p.Jobs, p.Next, err
	}, opts.Cursor)
}

// pages turns a paged listing into an iterator.
func pages[T any](page func(cursor string) ([]T, string, error), cursor string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// GetJob looks one id up: queued, in flight, its state and timer. It
// returns an error wrapping persistence.ErrNotFound when the queue holds
// nothing of the id.
func (c *Client) GetJob(ctx context.Context, queue, id string) (JobInfo, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	info, err := c.store.GetJob(ctx, queue, id)
	if err != nil {
		return JobInfo{}, fmt.Errorf("client: look up %s/%s: %w", queue, id, err)
	}
	return info, nil
}

// InFlight returns the in-flight batches of the queue's shards: the ids
// handed to a handler call and not settled yet.
func (c *Client) InFlight(ctx context.Context, queue string) ([]InFlightBatch, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	b, err := c.store.Processing(ctx, queue)
	if err != nil {
		return nil, fmt.Errorf("client: in-flight batches of %s: %w", queue, err)
	}
	return b, nil
}

// Delete deletes every queued payload of id (docs/contract.md §3.9). It
// returns an error wrapping persistence.ErrNotFound when nothing of the
// id is queued; a call in flight for the id is not touched.
func (c *Client) Delete(ctx context.Context, queue, id string) error {
	return c.jobAction(ctx, queue, id, "delete", c.store.DeleteJob)
}

// RequeueMorgue puts the named morgue entries back in the queue, due now
// with a fresh retry count, and returns how many it requeued (unknown ids
// are skipped; no ids requeue nothing).
func (c *Client) RequeueMorgue(ctx context.Context, queue string, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return c.morgueAction(ctx, queue, "requeue from", func(ctx context.Context) (int, error) {
		return c.store.RequeueMorgue(ctx, queue, ids)
	})
}

// RequeueMorgueAll requeues every morgue entry of the queue.
func (c *Client) RequeueMorgueAll(ctx context.Context, queue string) (int, error) {
	return c.morgueAction(ctx, queue, "requeue all of", func(ctx context.Context) (int, error) {
		return c.store.RequeueMorgueAll(ctx, queue)
	})
}

// DeleteMorgue deletes the named morgue entries and returns how many it
// deleted (no ids delete nothing).
func (c *Client) DeleteMorgue(ctx context.Context, queue string, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return c.morgueAction(ctx, queue, "delete from", func(ctx context.Context) (int, error) {
		return c.store.DeleteMorgue(ctx, queue, ids)
	})
}

// DeleteMorgueAll empties the queue's morgue.
func (c *Client) DeleteMorgueAll(ctx context.Context, queue string) (int, error) {
	return c.morgueAction(ctx, queue, "empty", func(ctx context.Context) (int, error) {
		return c.store.DeleteMorgueAll(ctx, queue)
	})
}

func (c *Client) morgueAction(ctx context.Context, queue, what string, run func(context.Context) (int, error)) (int, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	n, err := run(ctx)
	if err != nil {
		return n, fmt.Errorf("client: %s the morgue of %s: %w", what, queue, err)
	}
	return n, nil
}
