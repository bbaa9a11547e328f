package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestWaitingFeedReadsTakeNoConnection: many more waiting change-feed
// reads than the store's client has connections leave its pool free for
// everything else (a lease renewal here), and all of them get the next
// entry.
func TestWaitingFeedReadsTakeNoConnection(t *testing.T) {
	const readers = 60
	db := redistest.New(t)
	ctx := context.Background()
	// Two connections, and a caller waits at most 500 ms for one.
	rdb := redis.NewClient(&redis.Options{Addr: db.Client.Options().Addr, PoolSize: 2, PoolTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1, Stateful: true, FeedMaxLen: 100}))
	lease, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q", Shard: 0}, "n", time.Minute)
	require.NoError(t, err)

	var wg sync.WaitGroup
	got := make([][]persistence.FeedEntry, readers)
	errs := make([]error, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, errs[i] = s.ReadFeed(ctx, "q", "0", 10, 20*time.Second)
		}()
	}
	// The readers wait; the store's connections serve the lease meanwhile,
	// again and again.
	for range 20 {
		require.NoError(t, s.RenewShard(ctx, lease, time.Minute))
		time.Sleep(10 * time.Millisecond)
	}
	_, err = s.SetState(ctx, "q", "a", []byte("one"), 0, 0)
	require.NoError(t, err)
	wg.Wait()
	for i := range readers {
		require.NoError(t, errs[i], "reader %d", i)
		require.Len(t, got[i], 1, "reader %d", i)
		require.Equal(t, "one", string(got[i][0].Data))
	}
}
