package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// startOrphanMember starts an in-process cluster node of c serving queue q
// (4 shards) that never serves the shards in never; its handler records
// which node handled which id.
func (c *clusterEnv) startOrphanMember(name string, handled func(node, id string), never ...persistence.ShardRef) *member {
	c.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.db.Addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
	c.t.Cleanup(func() { rdb.Close() })
	store, err := redisstore.New(rdb, &redisstore.Config{Prefix: c.db.Prefix})
	require.NoError(c.t, err)
	tr, addr := c.network.Transport(c.t)
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: name, Logger: clusterLog(c.t, name), LeaseTTL: time.Second, Concurrency: 4,
		Cluster: orderly.WithTransport(&orderly.ClusterConfig{Bind: addr, Join: c.seeds, RejoinInterval: 300 * time.Millisecond}, tr),
		Workers: []orderly.Worker{{Queue: "q", Shards: 4, Handler: func(_ context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				handled(name, j.ID)
			}
			return nil
		}}},
	})
	require.NoError(c.t, err)
	orderly.NeverServe(n, never...)
	require.NoError(c.t, n.Start(context.Background()))
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	})
	if len(c.seeds) == 0 {
		c.seeds = []string{addr}
	}
	return &member{name: name, node: n, store: store, addr: addr}
}

// A shard that no node serves (docs/contract.md §2.4): node b counts
// itself in the placement but never serves its share, as a member whose
// view disagrees would. Alone, b reports not ready and names the unserved
// shards; once a joins, a adopts the shards b leaves unserved (its own
// share and b's), every job is processed by a, and both report ready.
func TestClusterServesUnservedShards(t *testing.T) {
	t.Parallel()
	c := newClusterEnv(t)
	var mu sync.Mutex
	by := map[string]string{} // id -> node that handled it
	handled := func(node, id string) {
		mu.Lock()
		defer mu.Unlock()
		by[id] = node
	}
	all := make([]persistence.ShardRef, 4)
	for i := range all {
		all[i] = persistence.ShardRef{Queue: "q", Shard: i}
	}
	b := c.startOrphanMember("b", handled, all...)

	// One id per shard.
	var jobs []persistence.NewJob
	for i := 0; len(jobs) < 4; i++ {
		id := fmt.Sprint("id-", i)
		if persistence.ShardOf(id, 4) == len(jobs) {
			jobs = append(jobs, persistence.NewJob{ID: id})
		}
	}
	require.NoError(t, b.store.Enqueue(context.Background(), "q", jobs))

	var notReady error
	require.Eventually(t, func() bool {
		notReady = b.node.Ready(context.Background())
		return notReady != nil && strings.Contains(notReady.Error(), "no node serves shard")
	}, 15*time.Second, 50*time.Millisecond, "b reports the unserved shards: %v", notReady)
	require.ErrorIs(t, notReady, orderly.ErrNotReady)
	for _, ref := range all {
		require.Contains(t, notReady.Error(), ref.String())
	}
	t.Log(notReady)
	mu.Lock()
	require.Empty(t, by, "nobody served the shards yet")
	mu.Unlock()

	a := c.startOrphanMember("a", handled)
	require.Eventually(t, func() bool { return seesAll(a, 2) && seesAll(b, 2) }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(by) == len(jobs)
	}, 20*time.Second, 20*time.Millisecond, "every shard served")
	mu.Lock()
	for id, node := range by {
		require.Equal(t, "a", node, "id %s", id)
	}
	mu.Unlock()
	owners, err := a.store.ShardOwners(context.Background(), "q")
	require.NoError(t, err)
	for _, o := range owners {
		require.Equal(t, "a", o.Owner, "shard %d", o.Shard)
	}
	for _, m := range []*member{a, b} {
		require.Eventually(t, func() bool { return m.node.Ready(context.Background()) == nil }, 10*time.Second, 50*time.Millisecond,
			"%s ready once every shard is served", m.name)
	}
	st, err := a.node.Status(context.Background())
	require.NoError(t, err)
	require.Equal(t, 4, st.Serving, "a serves its share and the shards it adopted")
	require.False(t, errors.Is(a.node.Ready(context.Background()), orderly.ErrNotReady))

	// b can serve again: a gives the adopted shards back (after adoptHold,
	// 10 s here) and b takes its share; nobody is left unserved meanwhile.
	orderly.ServeAgain(b.node)
	require.Eventually(t, func() bool {
		owners, err := a.store.ShardOwners(context.Background(), "q")
		if err != nil {
			return false
		}
		held := map[string]int{}
		for _, o := range owners {
			held[o.Owner]++
		}
		return held["a"] > 0 && held["b"] > 0 && held["a"]+held["b"] == 4
	}, 30*time.Second, 50*time.Millisecond, "b takes its share back from the adopter")
	for _, m := range []*member{a, b} {
		require.Eventually(t, func() bool { return m.node.Ready(context.Background()) == nil }, 10*time.Second, 50*time.Millisecond,
			"%s ready with its own share", m.name)
	}
}
