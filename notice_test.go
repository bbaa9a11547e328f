package orderly_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// On a Redis Cluster, enqueue notices travel by sharded pub/sub
// (docs/storage.md §2): the node subscribes each shard's channel, and an
// enqueue wakes the idle shard through it. The idle poll is an hour long,
// so only the notice explains a job handled in the test's time (a shard
// fetches once it holds its lease and after each batch, then sleeps until
// a notice or the idle poll).
func TestNodeClusterNoticeWakesIdleShard(t *testing.T) {
	t.Parallel()
	const shards = 4
	db := redistest.NewCluster(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	var mu sync.Mutex // guards handled
	handled := map[string]bool{}
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: "notice", LeaseTTL: 3 * time.Second, IdlePoll: time.Hour, Logger: testLogger(t),
		Workers: []orderly.Worker{{Queue: "w", Shards: shards, Handler: func(_ context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range b.Jobs {
				handled[j.ID] = true
			}
			return nil
		}}},
	})
	require.NoError(t, err)
	orderly.SetControlPoll(n, time.Hour)
	ctx := context.Background()
	require.NoError(t, n.Start(ctx))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	}()
	require.Eventually(t, func() bool {
		st, err := n.Status(ctx)
		return err == nil && st.Serving == shards
	}, 30*time.Second, 10*time.Millisecond, "serving every shard")

	// The node listens on the shard channels.
	for sh := range shards {
		ch := fmt.Sprintf("%s:{w:%d}:2:notify", db.Prefix, sh)
		m, err := db.Client.MasterForKey(ctx, ch)
		require.NoError(t, err)
		require.EqualValues(t, 1, m.PubSubShardNumSub(ctx, ch).Val()[ch], "subscribers of %s", ch)
	}

	c, err := client.NewFromStore(store, nil)
	require.NoError(t, err)
	// One job per shard and round; a round starts once the previous one
	// is handled everywhere.
	for round := range 3 {
		var ids []string
		for sh := range shards {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%d-%d", round, i)
				if persistence.ShardOf(id, shards) == sh {
					ids = append(ids, id)
					break
				}
			}
		}
		for _, id := range ids {
			require.NoError(t, c.Enqueue(ctx, "w", client.Job{ID: id}))
		}
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if !handled[id] {
					return false
				}
			}
			return true
		}, 30*time.Second, 10*time.Millisecond, "round %d handled (the idle poll is an hour)", round)
	}
}
