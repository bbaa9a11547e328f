package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// shardChannel and ctlChannel spell the shard channels of docs/storage.md
// §2 as the tests expect them.
func shardChannel(prefix, queue string, shard int) string {
	return fmt.Sprintf("%s:{%s:%d}:2:notify", prefix, queue, shard)
}

func ctlChannel(prefix, queue string) string { return fmt.Sprintf("%s:{%s}:2:notify", prefix, queue) }

// shardNumSub returns how many subscribers each shard channel has, summed
// over the masters (each counts the channels of its own slots).
func shardNumSub(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, channels ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, ch := range channels {
		// SHARDNUMSUB answers for the slot's owner: route it by channel.
		m, err := rdb.MasterForKey(ctx, ch)
		require.NoError(t, err)
		n, err := m.PubSubShardNumSub(ctx, ch).Result()
		require.NoError(t, err)
		out[ch] = n[ch]
	}
	return out
}

// idOnShard returns an id of the given shard (of shards), the n-th such.
func idOnShard(shard, shards, n int) string {
	for i := 0; ; i++ {
		id := "id-" + strconv.Itoa(i)
		if persistence.ShardOf(id, shards) == shard {
			if n == 0 {
				return id
			}
			n--
		}
	}
}

// TestSubscribeClusterSharded checks that on a Redis 7 Cluster the store
// uses sharded pub/sub (docs/storage.md §2): a subscription holds every
// shard channel of the queue and its controls channel, an enqueue is
// published on its shard's channel and a pause on the controls channel,
// and the queue's ordinary channel still has its subscriber (producers of
// earlier releases publish there).
func TestSubscribeClusterSharded(t *testing.T) {
	db := redistest.NewCluster(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	const shards = 16
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: shards}))
	// pubsubClients counts the pub/sub connections of the masters.
	pubsubClients := func() int64 {
		var n atomic.Int64
		require.NoError(t, db.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			list, err := m.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
			n.Add(int64(strings.Count(list, "\n")))
			return err
		}))
		return n.Load()
	}
	before := pubsubClients()
	sub, err := s.Subscribe(ctx, "q")
	require.NoError(t, err)
	defer sub.Close()
	// 17 shard channels share one connection per master, plus the
	// ordinary channel's.
	require.LessOrEqual(t, pubsubClients()-before, int64(len(db.Addrs)+1), "pub/sub connections of one subscription")

	channels := []string{ctlChannel(db.Prefix, "q")}
	for sh := range shards {
		channels = append(channels, shardChannel(db.Prefix, "q", sh))
	}
	for ch, n := range shardNumSub(t, ctx, db.Client, channels...) {
		require.EqualValues(t, 1, n, "subscribers of %s", ch)
	}
	classic := db.Prefix + ":notify:q"
	// Ordinary subscriptions are counted by the node the subscriber
	// talks to: add up the masters.
	var classicSubs atomic.Int64
	require.NoError(t, db.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.PubSubNumSub(ctx, classic).Result()
		classicSubs.Add(n[classic])
		return err
	}))
	require.EqualValues(t, 1, classicSubs.Load(), "subscribers of %s", classic)

	// Watch the channels from outside too: the notices go where the
	// layout says.
	id := idOnShard(2, shards, 0)
	watch := db.Client.SSubscribe(ctx, shardChannel(db.Prefix, "q", 2))
	defer watch.Close()
	_, err = watch.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: id, Payload: []byte("x")}}))
	msg, err := watch.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", msg.Payload)
	require.Equal(t, persistence.ShardRef{Queue: "q", Shard: 2}, <-sub.C())

	ctl := db.Client.SSubscribe(ctx, ctlChannel(db.Prefix, "q"))
	defer ctl.Close()
	_, err = ctl.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, s.SetPaused(ctx, "q", true))
	msg, err = ctl.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "ctl", msg.Payload)
	require.Equal(t, persistence.ShardRef{Queue: "q", Shard: persistence.ControlsNotice}, <-sub.C())

	// A notice on the ordinary channel, as a node of an earlier release
	// publishes it, still arrives.
	require.NoError(t, db.Client.Publish(ctx, classic, "3").Err())
	require.Equal(t, persistence.ShardRef{Queue: "q", Shard: 3}, <-sub.C())

	// Closing ends every subscription (the server counts a closed
	// connection out as it reads its end).
	require.NoError(t, watch.Close())
	require.NoError(t, ctl.Close())
	require.NoError(t, sub.Close())
	require.Eventually(t, func() bool {
		for _, n := range shardNumSub(t, ctx, db.Client, channels...) {
			if n != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "shard channels keep subscribers after Close")
}

// TestSubscribeClusterSlotMove moves the slot of one shard channel to
// another master: the server ends the sharded subscription (sunsubscribe),
// and the store must subscribe it again on the new owner.
func TestSubscribeClusterSlotMove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster and moves a slot")
	}
	if redistest.Binary() == "" || redisserver.CLI() == "" {
		if redistest.Required() {
			t.Fatal("redis-server and redis-cli are required")
		}
		t.Skip("redis-server or redis-cli not installed")
	}
	ctx := context.Background()
	cl, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: 3})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRedirects: 16})
	t.Cleanup(func() { rdb.Close() })
	const prefix, shards, target = "slotmv", 4, 1
	s, err := redisstore.New(rdb, &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: shards}))
	sub, err := s.Subscribe(ctx, "q")
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })

	n := 0
	// delivered enqueues jobs of the target shard until its notice
	// arrives; it fails the test after a minute.
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
	slot := int(rdb.ClusterKeySlot(ctx, channel).Val())
	src, err := rdb.MasterForKey(ctx, channel)
	require.NoError(t, err)
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	var dst *redis.Client
	for _, m := range masters {
		if m.Addr() != src.Options().Addr {
			dst = nodeClient(t, m)
			break
		}
	}
	require.NotNil(t, dst)
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	host, port := splitAddr(t, dst.Options().Addr)

	// The usual resharding steps for one slot, keys included.
	require.NoError(t, dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	require.NoError(t, src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		require.NoError(t, err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(t, src.Do(ctx, args...).Err())
	}
	for _, m := range masters {
		require.NoError(t, nodeClient(t, m).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	}

	delivered("after the slot moved")
	require.Eventually(t, func() bool {
		return dst.PubSubShardNumSub(ctx, channel).Val()[channel] == 1
	}, 30*time.Second, 50*time.Millisecond, "the new owner does not count the subscriber of %s", channel)
}

// splitAddr splits host:port.
func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return host, port
}
