package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/orderlyhq/orderly/persistence"
)

// CancelOption changes what Cancel does.
type CancelOption func(*cancelOptions)

type cancelOptions struct{ mode persistence.CancelMode }

// CancelDelete makes Cancel drop the id's payloads instead of moving them
// to the morgue.
func CancelDelete() CancelOption {
	return func(o *cancelOptions) { o.mode = persistence.CancelDelete }
}

// Cancel cancels job id of queue across the cluster (docs/contract.md
// §3.13): its queued payloads go to the morgue with the error "cancelled"
// (or are dropped, with CancelDelete), and a handler call in flight for it
// is cancelled on whichever node runs it (its context ends with the cause
// persistence.ErrCancelled); the call's payloads of the id follow the same
// way unless the call succeeded. It returns what was done, or an error
// wrapping persistence.ErrNotFound when the id is neither queued nor in
// flight.
func (c *Client) Cancel(ctx context.Context, queue, id string, opts ...CancelOption) (CancelResult, error) {
	o := cancelOptions{mode: persistence.CancelKill}
	for _, opt := range opts {
		opt(&o)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	res, err := c.store.CancelJob(ctx, queue, id, o.mode)
	if err != nil {
		if errors.Is(err, persistence.ErrInvalid) || errors.Is(err, persistence.ErrUnknownQueue) {
			return res, err
		}
		return res, fmt.Errorf("client: cancel %s/%s: %w", queue, id, err)
	}
	if !res.Found() {
		return res, fmt.Errorf("client: cancel %s/%s: %w: the id is neither queued nor in flight", queue, id, persistence.ErrNotFound)
	}
	return res, nil
}
