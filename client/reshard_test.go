package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Reshard starts a reshard in the store and ReshardStatus follows it; no
// node runs here, so it stays running with every id left to move.
func TestClientReshard(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 4}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: fmt.Sprintf("id-%d", i), Payload: []byte("p")}))
	}

	st, err := c.ReshardStatus(ctx, "q")
	require.NoError(t, err)
	require.False(t, st.Shape.Resharding())
	require.Equal(t, 4, st.Shape.Current.Count)

	st, err = c.Reshard(ctx, "q", 7)
	require.NoError(t, err)
	require.True(t, st.Shape.Resharding())
	require.Equal(t, persistence.ShardRange{Gen: 2, Base: 4, Count: 7}, st.Shape.Current)
	require.Equal(t, 4, st.Shape.From.Count)
	require.EqualValues(t, 10, st.Left)
	require.Zero(t, st.Moved)

	again, err := c.ReshardStatus(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, st, again)
	_, err = c.Reshard(ctx, "q", 7)
	require.NoError(t, err, "asking again for the running target changes nothing")
	_, err = c.Reshard(ctx, "q", 2)
	require.ErrorIs(t, err, persistence.ErrReshardRunning)
	_, err = c.Reshard(ctx, "q", 0)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	_, err = c.Reshard(ctx, "nope", 2)
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	_, err = c.ReshardStatus(ctx, "nope")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
}
