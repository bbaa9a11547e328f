package redisstore_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestSubscribeClusterFailover checks that enqueue notifications keep
// arriving on a 3-master Cluster (one replica each) after the master the
// subscription of one shard's channel is connected to is killed and its
// replica promoted. Notifications use sharded pub/sub (docs/storage.md
// §2): the store must subscribe the shard channel again on the promoted
// replica.
func TestSubscribeClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and fails over a Redis Cluster")
	}
	if redistest.Binary() == "" || redisserver.CLI() == "" {
		if redistest.Required() {
			t.Fatal("redis-server and redis-cli are required")
		}
		t.Skip("redis-server or redis-cli not installed")
	}
	ctx := context.Background()
	cl, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: 3, Replicas: 1})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	// Runs once the client is closed: the client's pools probe a dead
	// node once a second and stop at their next probe.
	t.Cleanup(func() { waitNoDialer(t) })
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRedirects: 16})
	t.Cleanup(func() { rdb.Close() })
	const prefix = "subfo"
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	const shards, target = 8, 5
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: shards}))
	sub, err := s.Subscribe(ctx, "q")
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })

	n := 0
	// delivered enqueues jobs until one notification arrives, tolerating
	// errors while the Cluster settles; it fails the test after a minute.
	delivered := func(stage string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		var lastErr error
		for time.Now().Before(deadline) {
			lastErr = s.Enqueue(ctx, "q", []persistence.NewJob{{ID: idOnShard(target, shards, n), Payload: []byte("x")}})
			n++
			select {
			case ref, ok := <-sub.C():
				require.True(t, ok, "%s: subscription closed", stage)
				if ref == (persistence.ShardRef{Queue: "q", Shard: target}) {
					return
				}
			case <-time.After(500 * time.Millisecond):
			}
		}
		t.Fatalf("%s: no notice of shard %d within a minute (last enqueue error: %v)", stage, target, lastErr)
	}
	delivered("before")

	channel := shardChannel(prefix, "q", target)

	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)

	// A replica that never synced with its master does not take over:
	// wait until every replica's link is up.
	for _, srv := range cl.Servers() {
		if slices.Contains(masters, srv) {
			continue
		}
		c := nodeClient(t, srv)
		require.Eventually(t, func() bool {
			info, err := c.Info(ctx, "replication").Result()
			return err == nil && strings.Contains(info, "master_link_status:up")
		}, 60*time.Second, 50*time.Millisecond, "replica %s never synced", srv.Addr())
	}

	// Kill the master the subscription is connected to.
	var conn *redisserver.Server
	for _, m := range masters {
		if numSub(ctx, m, channel) > 0 {
			conn = m
		}
	}
	require.NotNil(t, conn, "no master counts the subscriber of %s", channel)
	conn.Kill()
	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		ms, err := cl.Masters(waitCtx)
		if err == nil && len(ms) == 3 && !slices.Contains(ms, conn) {
			break
		}
		require.NoError(t, waitCtx.Err(), "no replica took over the killed master: %v\n%s", err, clusterNodes(ctx, cl))
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, cl.WaitOK(waitCtx))
	delivered("after the failover")
	// The new subscription lives on a running master.
	require.Eventually(t, func() bool {
		ms, err := cl.Masters(ctx)
		if err != nil {
			return false
		}
		for _, m := range ms {
			if numSub(ctx, m, channel) > 0 {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "no running master counts the subscriber")
}

// nodeClient returns a plain client of one cluster node, closed when the
// test ends.
func nodeClient(t *testing.T, s *redisserver.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterNodes returns CLUSTER NODES as a running node sees it, for failure
// messages.
func clusterNodes(ctx context.Context, cl *redisserver.Cluster) string {
	for _, srv := range cl.Servers() {
		if srv.Pid() == 0 {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		out, err := c.ClusterNodes(ctx).Result()
		c.Close()
		if err == nil {
			return out
		}
	}
	return "no node answers"
}

// numSub returns how many clients of one node subscribe to the shard
// channel.
func numSub(ctx context.Context, s *redisserver.Server, channel string) int64 {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	return c.PubSubShardNumSub(ctx, channel).Val()[channel]
}

// waitNoDialer waits until no go-redis pool probes a dead node any more, so
// that the package's leak check does not count those goroutines.
func waitNoDialer(t *testing.T) {
	deadline := time.Now().Add(30 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), "(*ConnPool).tryDial") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Log("a go-redis pool still probes a dead node")
}
