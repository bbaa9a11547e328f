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

// feedShape reads the whole change feed of a queue as "id@version:data".
func feedShape(t *testing.T, s *redisstore.Store, queue string) []string {
	t.Helper()
	got, _, err := s.ReadFeed(context.Background(), queue, persistence.FeedOldest, 100, 0)
	require.NoError(t, err)
	out := make([]string, len(got))
	for i, e := range got {
		out[i] = fmt.Sprintf("%s@%d:%s", e.ID, e.Version, e.Data)
	}
	return out
}

// TestOverlappingRelaysKeepFeedOrder interleaves two relays of one outbox:
// an outside write's relay reads the change to version 1, then, before it
// publishes, a second outside write commits version 2 and its relay
// publishes both. The late first relay publishes nothing: the feed holds
// each version once, in order, never version 1 after version 2
// (docs/contract.md §11).
func TestOverlappingRelaysKeepFeedOrder(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1, Stateful: true, FeedMaxLen: 100}))

	interleaved := false
	redisstore.SetAfterOutboxRead(s, func() {
		if interleaved {
			return
		}
		interleaved = true
		_, err := s.SetState(ctx, "q", "a", []byte("two"), 1, 0)
		require.NoError(t, err)
		require.Equal(t, []string{"a@1:one", "a@2:two"}, feedShape(t, s, "q"), "the inner relay publishes both")
	})
	_, err = s.SetState(ctx, "q", "a", []byte("one"), 0, 0)
	require.NoError(t, err)
	require.True(t, interleaved)
	require.Equal(t, []string{"a@1:one", "a@2:two"}, feedShape(t, s, "q"))

	// The outbox is empty, and a relay of entries put back (an XDEL lost in
	// a failover looks the same) publishes nothing again.
	relayed, _, more, err := s.RelayOutbox(ctx, persistence.ShardRef{Queue: "q", Shard: 0}, 0)
	require.NoError(t, err)
	require.Zero(t, relayed)
	require.False(t, more)
}

// TestReplicatedFeedRelay runs the relay in the replicated durability mode
// on a master without its replica: publishing to the change feed reports
// persistence.ErrNotReplicated and leaves the outbox for the next relay,
// which does not publish the change a second time.
func TestReplicatedFeedRelay(t *testing.T) {
	ctx := context.Background()
	master := redistest.NewServer(t, redistest.Options{})
	mc := master.Client(t)
	s, err := redisstore.New(mc, &redisstore.Config{Durability: redisstore.DurabilityReplicated, DurabilityReplicas: 1,
		DurabilityTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	async, err := redisstore.New(mc, nil)
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1, Stateful: true, FeedMaxLen: 100}))

	// The write is applied but not replicated, so it does not relay.
	_, err = s.SetState(ctx, "q", "a", []byte("one"), 0, 0)
	require.ErrorIs(t, err, persistence.ErrNotReplicated)
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	_, _, _, err = s.RelayOutbox(ctx, ref, 0)
	require.ErrorIs(t, err, persistence.ErrNotReplicated)
	n, err := mc.XLen(ctx, "orderly:{q:0}:2:outbox").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the entry stays in the outbox")

	relayed, _, _, err := async.RelayOutbox(ctx, ref, 0)
	require.NoError(t, err)
	require.Equal(t, 1, relayed)
	require.Equal(t, []string{"a@1:one"}, feedShape(t, async, "q"))
}
