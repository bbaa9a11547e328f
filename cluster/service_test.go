package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
	"github.com/orderlyhq/orderly/persistence"
)

// The service hands the node its share of the shards as the membership
// changes, advertises the node unhealthy once it has not reached the store
// for half a lease (its share then goes to the others), and healthy again
// after a whole lease of successful pings. Health runs in virtual time.
func TestServicePlacementAndHealth(t *testing.T) {
	nw := clustertest.NewNetwork()
	a, seed := start(t, nw, "a", nil, cluster.Meta{Queues: []string{"q"}})
	b, _ := start(t, nw, "b", []string{seed}, cluster.Meta{Queues: []string{"q"}})

	var mu sync.Mutex // guards got
	var got [][]persistence.ShardRef
	last := func() int {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			return -1
		}
		return len(got[len(got)-1])
	}
	var pings atomic.Int32
	var down atomic.Bool
	clk := clock.NewSimulated(time.Unix(1_700_000_000, 0))
	svc := cluster.NewService(cluster.ServiceConfig{
		Members: a, Self: "a", Queues: map[string]int{"q": 4}, LeaseTTL: 3 * time.Second, Clock: clk,
		Logger: slog.New(slog.DiscardHandler),
		Assign: func(refs, _ []persistence.ShardRef) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, refs)
		},
		Ping: func(context.Context) error {
			pings.Add(1)
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		},
	})
	require.NoError(t, svc.Start(context.Background()))
	require.NoError(t, svc.Start(context.Background()), "starting twice does nothing")
	require.Eventually(t, func() bool { return last() == 2 }, 5*time.Second, 10*time.Millisecond, "half of the shards each")

	// tick advances the virtual clock by one health period (LeaseTTL/3)
	// and waits for the health loop's ping.
	tick := func() {
		t.Helper()
		n := pings.Load()
		require.Eventually(t, func() bool { return clk.Pending() >= 2 }, 5*time.Second, time.Millisecond, "both loops wait")
		clk.Advance(time.Second)
		require.Eventually(t, func() bool { return pings.Load() == n+1 }, 5*time.Second, time.Millisecond)
	}
	unhealthy := func(m *cluster.Membership, name string) bool {
		for _, x := range m.Members() {
			if x.Name == name {
				return x.Meta.Unhealthy
			}
		}
		return false
	}
	down.Store(true)
	tick() // fails since t1
	tick() // 1 s: under half a lease
	require.False(t, unhealthy(b, "a"))
	tick() // 2 s: unhealthy
	require.Eventually(t, func() bool { return unhealthy(b, "a") }, 5*time.Second, 10*time.Millisecond, "b sees a unhealthy")
	require.Eventually(t, func() bool { return last() == 0 }, 5*time.Second, 10*time.Millisecond, "an unhealthy node serves nothing")

	down.Store(false)
	tick() // reachable since t4
	tick()
	tick()
	require.True(t, unhealthy(b, "a"), "healthy again only after a whole lease")
	tick() // 3 s
	require.Eventually(t, func() bool { return !unhealthy(b, "a") }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return last() == 2 }, 5*time.Second, 10*time.Millisecond)

	mu.Lock()
	n := len(got)
	mu.Unlock()
	svc.Refresh()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == n+1 }, 5*time.Second, 10*time.Millisecond, "Refresh re-sends an unchanged placement")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, svc.Stop(ctx))
	require.NoError(t, svc.Stop(ctx), "stopping twice does nothing")
}
