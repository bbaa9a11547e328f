package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestDurabilityAcrossRedisKill enqueues, fetches and fails jobs, kills
// redis-server with SIGKILL (AOF, appendfsync always), restarts it and checks
// that every acknowledged job is there: queued, in the morgue, or in flight
// and restored by the next owner. The restarted server has no scripts loaded,
// so this also checks that the store reloads them.
func TestDurabilityAcrossRedisKill(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	ctx := context.Background()
	s, err := redisstore.New(srv.Client(t), nil)
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 4}))

	const n = 2000
	var jobs []persistence.NewJob
	for i := range n {
		jobs = append(jobs, persistence.NewJob{ID: fmt.Sprintf("order-%d", i%500), Payload: []byte(fmt.Sprintf("event-%d", i))})
	}
	require.NoError(t, s.Enqueue(ctx, "orders", jobs))

	// Shard 0: one batch in flight. Shard 1: one batch failed, one id dead.
	ref0 := persistence.ShardRef{Queue: "orders", Shard: 0}
	l0, _, err := s.AcquireShard(ctx, ref0, "n1", 2*time.Second)
	require.NoError(t, err)
	res, err := s.Advance(ctx, l0, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Len(t, res.Batch.Jobs, 10)
	l1, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "orders", Shard: 1}, "n1", time.Minute)
	require.NoError(t, err)
	res, err = s.Advance(ctx, l1, persistence.AdvanceRequest{Fetch: 2, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	failed := res.Batch.Jobs
	_, err = s.Advance(ctx, l1, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: failed[0].ID, Error: "dead"}, {ID: failed[1].ID, Error: "dead"}}})
	require.NoError(t, err)

	before, err := s.Stats(ctx, "orders")
	require.NoError(t, err)
	require.EqualValues(t, 490, before[0].Length)
	require.EqualValues(t, 10, before[0].Busy)
	require.EqualValues(t, 2, before[0].MorgueLength)

	srv.Restart(t)

	after, err := s.Stats(ctx, "orders")
	require.NoError(t, err)
	before[0].Lag, after[0].Lag = 0, 0 // wall time moved on
	before[0].ShardLag, after[0].ShardLag = nil, nil
	require.Equal(t, before, after, "nothing lost across the kill")

	// The in-flight batch of shard 0 comes back with the next owner.
	var restored int
	require.Eventually(t, func() bool {
		_, restored, err = s.AcquireShard(ctx, ref0, "n2", time.Minute)
		return !errors.Is(err, persistence.ErrLeaseHeld)
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, 10, restored)
	final, err := s.Stats(ctx, "orders")
	require.NoError(t, err)
	require.EqualValues(t, 500, final[0].Length, "every id is queued again (the two failed ones with 3 of their 4 payloads)")
	require.EqualValues(t, 0, final[0].Busy)

	// Every payload is somewhere: count them all.
	total := 0
	cursor := ""
	for {
		page, err := s.ListJobs(ctx, "orders", persistence.ListOptions{Limit: 1000, Payloads: 1000, Cursor: cursor})
		require.NoError(t, err)
		for _, j := range page.Jobs {
			total += j.PayloadCount
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	require.Equal(t, n-2, total, "all payloads but the two in the morgue are queued")
}

// TestScriptsReloadAfterFlush checks every kind of call after SCRIPT FLUSH:
// single calls and pipelined ones load the scripts again.
func TestScriptsReloadAfterFlush(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 3}))
	flush := func() { require.NoError(t, db.Client.ScriptFlush(ctx).Err()) }

	flush()
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}))
	flush()
	page, err := s.ListJobs(ctx, "q", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 4)
	flush()
	n, err := s.PerformAllNow(ctx, "q")
	require.NoError(t, err)
	require.Zero(t, n)
	flush()
	l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "q", Shard: persistence.ShardOf("a", 3)}, "n", time.Minute)
	require.NoError(t, err)
	flush()
	res, err := s.Advance(ctx, l, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	require.NoError(t, s.LoadScripts(ctx))
}

// TestCheckServer checks the server requirements on real servers.
func TestCheckServer(t *testing.T) {
	ctx := context.Background()
	t.Run("default", func(t *testing.T) {
		srv := redistest.NewServer(t, redistest.Options{})
		info, err := redisstore.CheckServer(ctx, srv.Client(t), false)
		require.NoError(t, err)
		require.Equal(t, "noeviction", info.MaxmemoryPolicy)
		require.False(t, info.AOF)
		require.Len(t, info.Warnings, 1, "persistence is off")
	})
	t.Run("aof", func(t *testing.T) {
		srv := redistest.NewServer(t, redistest.Options{AOF: true})
		info, err := redisstore.CheckServer(ctx, srv.Client(t), false)
		require.NoError(t, err)
		require.True(t, info.AOF)
		require.Empty(t, info.Warnings)
	})
	t.Run("eviction", func(t *testing.T) {
		srv := redistest.NewServer(t, redistest.Options{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
		_, err := redisstore.CheckServer(ctx, srv.Client(t), false)
		require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
		info, err := redisstore.CheckServer(ctx, srv.Client(t), true)
		require.NoError(t, err)
		require.Len(t, info.Warnings, 2)
	})
}

// TestCheckServerCluster checks every master of a Cluster: one master that
// may evict is enough to refuse, and the error names it.
func TestCheckServerCluster(t *testing.T) {
	ctx := context.Background()
	db := redistest.NewCluster(t)
	info, err := redisstore.CheckServer(ctx, db.Client, false)
	require.NoError(t, err)
	require.NotEmpty(t, info.Version)
	require.Len(t, info.Warnings, 3, "persistence is off on each of the 3 masters")

	bad := redis.NewClient(&redis.Options{Addr: db.Addrs[1]})
	defer bad.Close()
	require.NoError(t, bad.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	t.Cleanup(func() { bad.ConfigSet(ctx, "maxmemory-policy", "noeviction") })
	_, err = redisstore.CheckServer(ctx, db.Client, false)
	require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
	require.ErrorContains(t, err, db.Addrs[1])
}
