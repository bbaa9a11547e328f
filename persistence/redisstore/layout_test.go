package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
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

// TestAdvanceDrainingLayout1SaysMore: an Advance that moved layout 1 data
// of its shard into layout 2 tells its caller to fetch again at once, so
// that a job the previous release queued is served without waiting for a
// notice or the idle poll.
func TestAdvanceDrainingLayout1SaysMore(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	old := newV1Store(db.Client, db.Prefix, nil)
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	score := 1.0
	require.NoError(t, old.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a", Payload: []byte("1"), Score: &score, PerformAt: time.Now().Add(-time.Second)}}))
	cur, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, cur.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	l, _, err := cur.AcquireShard(ctx, ref, "n", time.Minute)
	require.NoError(t, err)
	seq := int64(0)
	for {
		seq++
		require.Less(t, seq, int64(10), "the job did not come")
		res, err := cur.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: seq, Fetch: 10, MaxRetryCount: 25})
		require.NoError(t, err)
		if res.Batch != nil {
			require.Equal(t, "a", res.Batch.Jobs[0].ID)
			return
		}
		require.True(t, res.More, "Advance %d fetched nothing and said nothing more is due, with the job still queued", seq)
	}
}
