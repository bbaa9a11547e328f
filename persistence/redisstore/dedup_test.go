package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestDedupKeysBounded checks that the dedup keys of a shard do not pile
// up (docs/storage.md §2): each enqueue with keys trims lapsed ones, and
// the key expires a window after its last write.
func TestDedupKeysBounded(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1, DedupWindow: time.Minute}))
	key := db.Prefix + ":{q:0}:2:dedup"

	// 20 rounds of 100 fresh keys, a window apart: the set holds about one
	// round's keys, not every key ever seen.
	for round := range 20 {
		var jobs []persistence.NewJob
		for i := range 100 {
			jobs = append(jobs, persistence.NewJob{ID: "a", DedupKey: fmt.Sprintf("k%d-%d", round, i)})
		}
		res, err := s.EnqueueReport(ctx, "q", jobs)
		require.NoError(t, err)
		require.Zero(t, res.Duplicates)
		n, err := db.Client.ZCard(ctx, key).Result()
		require.NoError(t, err)
		require.LessOrEqual(t, n, int64(100+16), "round %d", round)
		now = now.Add(time.Minute)
	}
	ttl, err := db.Client.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "the key expires")
	require.LessOrEqual(t, ttl, time.Minute+time.Second)

	// Jobs without a key leave no trace.
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "plain", Shards: 1, DedupWindow: time.Minute}))
	require.NoError(t, s.Enqueue(ctx, "plain", []persistence.NewJob{{ID: "a"}}))
	n, err := db.Client.Exists(ctx, db.Prefix+":{plain:0}:2:dedup").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}
