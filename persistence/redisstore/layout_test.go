package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestLayoutRecordedByIdlePoll: once a store the previous release wrote is
// upgraded (every shard fenced, no layout 1 data left), a node that only
// polls its idle shards (nothing enqueued, no Advance) records the layout
// version.
func TestLayoutRecordedByIdlePoll(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	require.NoError(t, newV1Store(db.Client, db.Prefix, nil).RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))

	// A node of this release serves the shard (fencing the previous
	// release out of it) and gives it back.
	cur, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, cur.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	l, _, err := cur.AcquireShard(ctx, ref, "n", time.Minute)
	require.NoError(t, err)
	require.NoError(t, cur.ReleaseShard(ctx, l))
	_, err = db.Client.Get(ctx, db.Prefix+":layout").Result()
	require.True(t, errors.Is(err, redis.Nil), "not recorded yet: %v", err)

	// Another node, idle: a poll is all it does.
	idle, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	has, err := idle.PollShards(ctx, []persistence.ShardRef{ref})
	require.NoError(t, err)
	require.Equal(t, []bool{false}, has)
	v, err := db.Client.Get(ctx, db.Prefix+":layout").Result()
	require.NoError(t, err, "the poll records the layout")
	require.Equal(t, redisstore.LayoutVersion, v)
}
