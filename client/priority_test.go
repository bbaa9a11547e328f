package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestClientPriority checks Job.Priority: stored, shown by GetJob, and
// refused outside 0 to 4 (docs/contract.md §3.16).
func TestClientPriority(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "a", Priority: 2}, client.Job{ID: "b"}))
	info, err := c.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Equal(t, 2, info.Queued.Priority)
	info, err = c.GetJob(ctx, "q", "b")
	require.NoError(t, err)
	require.Equal(t, 0, info.Queued.Priority)
	for _, p := range []int{-1, 5} {
		var fe *persistence.FieldError
		err = c.Enqueue(ctx, "q", client.Job{ID: "c", Priority: p})
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "priority", fe.Field)
	}
}
