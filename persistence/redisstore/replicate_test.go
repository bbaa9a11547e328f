package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// waitReplicas waits until the master counts n connected replicas, all
// online (synchronized).
func waitReplicas(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && containsLine(info, "connected_slaves:"+strconv.Itoa(n)) && online(info) == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "master never counted %d replicas: %v %s", n, err, info)
		time.Sleep(50 * time.Millisecond)
	}
}

func online(info string) int {
	n := 0
	for _, l := range splitLines(info) {
		if strings.HasPrefix(l, "slave") && strings.Contains(l, "state=online") {
			n++
		}
	}
	return n
}

func containsLine(info, line string) bool {
	for _, l := range splitLines(info) {
		if l == line {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}

// TestReplicatedDurability runs the replicated mode on a master with one
// replica: writes succeed while the replica follows; once it is stopped an
// enqueue fails with persistence.ErrNotReplicated (the async mode still
// succeeds), a settle fails as a store failure (not as a lost lease), and
// everything succeeds again once the replica is back.
func TestReplicatedDurability(t *testing.T) {
	ctx := context.Background()
	master := redistest.NewServer(t, redistest.Options{})
	replica := redistest.NewServer(t, redistest.Options{Args: []string{"--replicaof", "127.0.0.1", master.Addr()[len("127.0.0.1:"):]}})
	mc := master.Client(t)
	waitReplicas(t, mc, 1)

	s, err := redisstore.New(mc, &redisstore.Config{Durability: redisstore.DurabilityReplicated, DurabilityTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	async, err := redisstore.New(mc, nil)
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	ref := persistence.ShardRef{Queue: "q", Shard: 0}

	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a", Payload: []byte("1")}}))
	lease, _, err := s.AcquireShard(ctx, ref, "node-1", 10*time.Second)
	require.NoError(t, err)
	res, err := s.Advance(ctx, lease, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	require.NoError(t, s.RenewShard(ctx, lease, 10*time.Second))

	replica.Stop(t)
	waitReplicas(t, mc, 0)

	err = s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "b", Payload: []byte("2")}})
	require.ErrorIs(t, err, persistence.ErrNotReplicated)
	require.NoError(t, async.Enqueue(ctx, "q", []persistence.NewJob{{ID: "c", Payload: []byte("3")}}))

	_, err = s.Advance(ctx, lease, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: res.Batch.Seq + 1, Fetch: 1, MaxRetryCount: 3})
	require.ErrorIs(t, err, persistence.ErrNotReplicated)
	require.NotErrorIs(t, err, persistence.ErrLeaseLost)
	require.ErrorIs(t, s.RenewShard(ctx, lease, 10*time.Second), persistence.ErrNotReplicated)

	replica.Start(t)
	waitReplicas(t, mc, 1)
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "b", Payload: []byte("2")}}))
	require.NoError(t, s.RenewShard(ctx, lease, 10*time.Second))
	require.NoError(t, s.ReleaseShard(ctx, lease))
}

// TestReplicatedCluster runs the replicated mode on a Cluster whose masters
// have no replica: the writes of every master are applied and reported as
// not replicated; the async mode on the same Cluster succeeds.
func TestReplicatedCluster(t *testing.T) {
	ctx := context.Background()
	db := redistest.NewCluster(t)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Durability: redisstore.DurabilityReplicated, DurabilityTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	async, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, async.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 16}))
	var jobs []persistence.NewJob
	for i := range 40 {
		jobs = append(jobs, persistence.NewJob{ID: fmt.Sprint("id-", i), Payload: []byte("x")})
	}
	require.ErrorIs(t, s.Enqueue(ctx, "q", jobs), persistence.ErrNotReplicated)
	st, err := async.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 40, st[0].Length, "the master applied the writes")
	require.NoError(t, async.Enqueue(ctx, "q", jobs))
	_, err = redisstore.New(db.Client, &redisstore.Config{Durability: "sync"})
	require.ErrorContains(t, err, `durability "sync"`)
}
