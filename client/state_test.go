package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

func TestClientState(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))
	c, err := client.NewFromStore(s, nil)
	require.NoError(t, err)

	v, err := c.SetState(ctx, "q", "order-1", []byte(`{"paid":true}`), 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	_, err = c.SetState(ctx, "q", "order-1", []byte(`{}`), 0)
	require.ErrorIs(t, err, client.ErrVersionConflict)
	st, err := c.GetState(ctx, "q", "order-1")
	require.NoError(t, err)
	require.Equal(t, client.State{Data: []byte(`{"paid":true}`), Version: 1}, st)
	ok, err := c.DeleteState(ctx, "q", "order-1", 1)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = c.GetState(ctx, "nope", "x")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
}
