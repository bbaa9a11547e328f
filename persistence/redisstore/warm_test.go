package redisstore_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// dials counts the connections a client opens.
type dials struct{ n atomic.Int32 }

func (d *dials) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.n.Add(1)
		return next(ctx, network, addr)
	}
}
func (d *dials) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (d *dials) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// After Warm, acquisitions and renewals of several shards at once use the
// connections it opened: none of them waits for a new connection's
// handshake, so each is one round trip (docs/contract.md §2.1). A node's
// batched renewal (RenewShards, a pipeline: go-redis sends pipelines on a
// pool of their own) does not either. The link has some latency so that
// calls overlap, as on a slow link.
func TestWarmOpensTheConnectionsLeaseCallsUse(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	proxy := redistest.NewProxy(t, db.Addr)
	proxy.Latency(t, 40*time.Millisecond)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	defer rdb.Close()
	d := &dials{}
	rdb.AddHook(d)
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	ctx := context.Background()
	const shards = 4
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: shards}))
	require.NoError(t, s.Warm(ctx, 2*shards))
	opened := d.n.Load()
	require.GreaterOrEqual(t, opened, int32(2*shards))

	before := s.Counters()
	var wg sync.WaitGroup
	leases := make([]persistence.Lease, shards)
	for sh := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "node-a", time.Minute)
			require.NoError(t, err)
			leases[sh] = l
			var inner sync.WaitGroup
			inner.Add(1)
			go func() { defer inner.Done(); require.NoError(t, s.RenewShard(ctx, l, time.Minute)) }()
			_, err = s.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 1})
			require.NoError(t, err)
			inner.Wait()
		}()
	}
	wg.Wait()
	for half := range 2 { // two batches at once, as beside another pipeline
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, err := range s.RenewShards(ctx, leases[half*shards/2:(half+1)*shards/2], time.Minute) {
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, opened, d.n.Load(), "no lease call opened a connection")
	require.EqualValues(t, 3*shards+2, s.Counters().Sub(before).RoundTrips, "an acquisition, a renewal and an advance: one round trip each; a batched renewal one")
}
