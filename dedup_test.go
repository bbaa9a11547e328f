package orderly_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/messages"
)

// A worker's DedupWindow reaches the store when the node registers the
// queue: the enqueue actor and the Go client then acknowledge a job whose
// dedup key was seen for its id as a duplicate, also after it was
// processed (docs/contract.md §3.12).
func TestWorkerDedupWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls atomic.Int64
	n := e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 2, DedupWindow: time.Hour,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			calls.Add(int64(len(b.Jobs)))
			return nil
		},
	}}})
	job := &messages.Job{Id: "order-1", Payload: []byte("paid"), DedupKey: "pay-1"}
	res, err := n.AskEnqueue(e.ctx, &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{job, job}})
	require.NoError(t, err)
	require.Nil(t, res.GetError())
	require.Equal(t, int64(2), res.GetEnqueued())
	require.Equal(t, int64(1), res.GetDuplicates())
	require.Eventually(t, func() bool { return e.stats("q").Processed == 1 }, 10*time.Second, 10*time.Millisecond)

	got, err := e.client.EnqueueReport(e.ctx, "q", client.Job{ID: "order-1", Payload: []byte("paid"), DedupKey: "pay-1"})
	require.NoError(t, err)
	require.Equal(t, 1, got.Duplicates, "a duplicate after processing")
	require.NoError(t, e.client.Enqueue(e.ctx, "q", client.Job{ID: "order-2"}))
	require.Eventually(t, func() bool { return e.stats("q").Processed == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, int64(2), calls.Load())
}
