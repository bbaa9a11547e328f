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

// RenewShards renews many leases in one script call, each on the rule of a
// single renewal: a lease whose token changed, or whose shard a layout 1
// node took back (its lease key no longer holds the fence), is refused
// alone; the call is one round trip and one command.
func TestRenewShardsFencesEachLeaseInOneCall(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	ctx := context.Background()
	const shards = 4
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: shards}))
	leases := make([]persistence.Lease, shards)
	for sh := range shards {
		leases[sh], _, err = s.AcquireShard(ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "node-a", 5*time.Second)
		require.NoError(t, err)
	}
	// A first call loads the script (EVALSHA, NOSCRIPT, then the script
	// itself): the count below is that of a call on a warm server.
	for _, err := range s.RenewShards(ctx, leases, 5*time.Second) {
		require.NoError(t, err)
	}
	require.NoError(t, db.Client.Set(ctx, fmt.Sprintf("%s:{q:1}:2:lease", db.Prefix), "9/someone-else", time.Minute).Err())
	require.NoError(t, db.Client.Set(ctx, fmt.Sprintf("%s:{q:2}:lease", db.Prefix), "layout-1-node", time.Minute).Err())

	// Tests running beside this one flush the server's script cache now
	// and then (a reload costs two more round trips): the same renewal,
	// which changes nothing the second time, is measured again then.
	var errs []error
	var used redisstore.Counters
	for range 5 {
		before := s.Counters()
		errs = s.RenewShards(ctx, leases, time.Minute)
		if used = s.Counters().Sub(before); used == (redisstore.Counters{RoundTrips: 1, Commands: 1}) {
			break
		}
	}
	require.Equal(t, redisstore.Counters{RoundTrips: 1, Commands: 1}, used)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], persistence.ErrLeaseLost)
	require.ErrorIs(t, errs[2], persistence.ErrLeaseLost)
	require.NoError(t, errs[3])
	for sh, want := range map[int]time.Duration{0: time.Minute, 3: time.Minute} {
		ttl, err := db.Client.PTTL(ctx, fmt.Sprintf("%s:{q:%d}:2:lease", db.Prefix, sh)).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, want-10*time.Second, "shard %d renewed", sh)
	}
	ttl, err := db.Client.PTTL(ctx, fmt.Sprintf("%s:{q:2}:2:lease", db.Prefix)).Result()
	require.NoError(t, err)
	require.LessOrEqual(t, ttl, 5*time.Second, "the fenced-out shard's lease is not extended")
}
