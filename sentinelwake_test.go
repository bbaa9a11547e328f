package orderly_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestFirstJobAfterSentinelFailoverIsPrompt: after Sentinel promoted a
// replica, the first job enqueued is handled without waiting for the idle
// poll (a minute here): the node's wake-up notices follow the new master.
func TestFirstJobAfterSentinelFailoverIsPrompt(t *testing.T) {
	t.Run("master killed", func(t *testing.T) { firstJobAfterFailover(t, false) })
	t.Run("SENTINEL FAILOVER", func(t *testing.T) { firstJobAfterFailover(t, true) })
}

func firstJobAfterFailover(t *testing.T, graceful bool) {
	if redisserver.Binary() == "" {
		t.Skip("needs redis-server")
	}
	set, err := redisserver.StartSentinel(redisserver.SentinelOptions{Replicas: 1})
	require.NoError(t, err)
	t.Cleanup(set.Close)
	ctx := context.Background()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: set.MasterName(), SentinelAddrs: set.SentinelAddrs()})
	t.Cleanup(func() { rdb.Close() })
	store, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	c, err := client.NewFromStore(store, nil)
	require.NoError(t, err)
	e := &env{t: t, store: store, client: c, ctx: ctx}

	done := make(chan string, 16)
	e.start(orderly.Config{IdlePoll: time.Minute, LeaseTTL: 15 * time.Second, Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(_ context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				done <- j.ID
			}
			return nil
		},
	}}})
	e.enqueue("q", client.Job{ID: "before"})
	require.Equal(t, "before", <-done)

	old, err := set.Master(ctx)
	require.NoError(t, err)
	if graceful {
		sc := redis.NewSentinelClient(&redis.Options{Addr: set.SentinelAddrs()[0]})
		require.NoError(t, sc.Failover(ctx, set.MasterName()).Err())
		sc.Close()
	} else {
		old.Kill()
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m, err := set.WaitFailover(wctx, old)
	require.NoError(t, err)
	// Straight to the new master, as soon as it is one: the node's
	// subscription may not follow it yet, and then the notice is lost.
	direct := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { direct.Close() })
	producer, err := redisstore.New(direct, nil)
	require.NoError(t, err)
	require.NoError(t, producer.Enqueue(ctx, "q", []persistence.NewJob{{ID: "after"}}))
	select {
	case id := <-done:
		require.Equal(t, "after", id)
	case <-time.After(20 * time.Second):
		t.Fatal("the first job after the failover waited for the idle poll")
	}
}
