package redisstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// Two nodes of one store read the same identity; another prefix on the
// same Redis is another store.
func TestStoreIDShared(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	a, err := New(db.Client, &Config{Prefix: db.Prefix})
	require.NoError(t, err)
	b, err := New(db.Client, &Config{Prefix: db.Prefix})
	require.NoError(t, err)
	idA, err := a.StoreID(ctx)
	require.NoError(t, err)
	idB, err := b.StoreID(ctx)
	require.NoError(t, err)
	require.Equal(t, idA, idB)
	require.Len(t, idA, 32)
	stored, err := db.Client.Get(ctx, db.Prefix+":store_id").Result()
	require.NoError(t, err)
	require.Equal(t, idA, stored)

	c, err := New(db.Client, &Config{Prefix: db.Prefix + "x"})
	require.NoError(t, err)
	idC, err := c.StoreID(ctx)
	require.NoError(t, err)
	require.NotEqual(t, idA, idC)
}
