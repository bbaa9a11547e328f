package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestEpochsGrowAfterPromotionWithClockBehind plays a replica promoted
// after it missed the master's last writes, on a host whose clock is an
// hour behind: Redis's own record and its clock both lie below the last
// epoch issued. An acquisition still gets an epoch above every earlier one
// (docs/contract.md §2.5), from the node that held the lost epoch and from
// another node that read the shard's owner meanwhile (as every node's
// orphan sweep does about twice a second).
func TestEpochsGrowAfterPromotionWithClockBehind(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	ctx := context.Background()
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	open := func() *redisstore.Store {
		s, err := redisstore.New(srv.Client(t), nil)
		require.NoError(t, err)
		require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
		return s
	}
	a, b := open(), open()
	take := func(s *redisstore.Store) int64 {
		t.Helper()
		var l persistence.Lease
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var err error
			l, _, err = s.AcquireShard(ctx, ref, "n", time.Minute)
			require.NoError(c, err)
		}, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, s.ReleaseShard(ctx, l))
		return l.Epoch
	}
	first := take(a)
	srv.Snapshot(t) // what the replica has
	lost := take(a) // written on the master only
	require.Greater(t, lost, first)
	_, err := b.ShardOwners(ctx, "q") // b's sweep reads it
	require.NoError(t, err)

	srv.Rollback(t) // the replica is promoted: the epoch record is back at first
	// and its clock is an hour behind.
	redisstore.SetEpochClockOffset(a, -time.Hour)
	redisstore.SetEpochClockOffset(b, -time.Hour)
	fromA := take(a)
	require.Greater(t, fromA, lost, "the node that held the lost epoch")
	fromB := take(b)
	require.Greater(t, fromB, fromA, "another node that read the lost epoch")
}
