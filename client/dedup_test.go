package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestClientEnqueueReport checks Job.DedupKey and EnqueueReport's count,
// through a middleware, and the key's validation.
func TestClientEnqueueReport(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3, DedupWindow: time.Hour}))
	var seen int
	stamp := func(next client.EnqueueFunc) client.EnqueueFunc {
		return func(ctx context.Context, queue string, jobs []client.Job) error {
			seen += len(jobs)
			return next(ctx, queue, jobs)
		}
	}
	c, err := client.NewFromStore(s, &client.Config{Middleware: []client.Middleware{stamp}})
	require.NoError(t, err)

	res, err := c.EnqueueReport(ctx, "q", client.Job{ID: "a", Payload: []byte("1"), DedupKey: "k"},
		client.Job{ID: "a", Payload: []byte("2"), DedupKey: "k"}, client.Job{ID: "b", DedupKey: "k"})
	require.NoError(t, err)
	require.Equal(t, 1, res.Duplicates)
	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Payload: []byte("3"), DedupKey: "k"}))
	res, err = c.EnqueueReport(ctx, "q", client.Job{ID: "a", Payload: []byte("4"), DedupKey: "k"})
	require.NoError(t, err)
	require.Equal(t, 1, res.Duplicates)
	require.Equal(t, 5, seen)
	info, err := s.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 1)

	var fe *persistence.FieldError
	_, err = c.EnqueueReport(ctx, "q", client.Job{ID: "c", DedupKey: strings.Repeat("x", persistence.MaxDedupKeyBytes+1)})
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "dedup_key", fe.Field)
}
