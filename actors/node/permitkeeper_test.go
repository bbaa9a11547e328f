package node

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// docs/contract.md §9: the permit keeper holds as many of a limited queue's
// cluster-wide permits as its node actor demands, at most the limit and
// what other holders leave; it tells the actor when that changes, and gives
// the permits back when it stops.
func TestPermitKeeperHoldsWhatTheNodeDemands(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	rs, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, rs.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 4}))

	var mu sync.Mutex // guards got
	var got []map[string]int
	last := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			return nil
		}
		return got[len(got)-1]
	}
	cfg := Config{Store: rs, LeaseTTL: 3 * time.Second, Limits: map[string]int{"q": 3}, PermitHolder: "n1/a",
		Clock: clock.Real(), Logger: slog.New(slog.DiscardHandler)}
	k := newPermitKeeper(cfg, func(m permitsHeld) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m.held)
	})
	k.start()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			k.stop()
		}
	})

	k.setDemand(map[string]int{"q": 2, "other": 5})
	require.Eventually(t, func() bool { return last()["q"] == 2 }, 5*time.Second, 5*time.Millisecond, "the demand, at once")
	k.setDemand(map[string]int{"q": 9})
	require.Eventually(t, func() bool { return last()["q"] == 3 }, 5*time.Second, 5*time.Millisecond, "at most the limit")

	// Another node holds the permits it can get: none left for it yet.
	n, err := rs.SetPermits(ctx, "q", "n2/b", 3, 3, 3*time.Second)
	require.NoError(t, err)
	require.Zero(t, n, "n1 holds all three")

	k.setDemand(map[string]int{})
	require.Eventually(t, func() bool { return last()["q"] == 0 }, 5*time.Second, 5*time.Millisecond, "no demand: given back at once")
	n, err = rs.SetPermits(ctx, "q", "n2/b", 3, 3, 3*time.Second)
	require.NoError(t, err)
	require.Equal(t, 3, n, "n2 takes what n1 gave back")
	_, err = rs.SetPermits(ctx, "q", "n2/b", 0, 3, 3*time.Second)
	require.NoError(t, err)

	k.setDemand(map[string]int{"q": 1})
	require.Eventually(t, func() bool { return last()["q"] == 1 }, 5*time.Second, 5*time.Millisecond)
	k.stop()
	stopped = true
	n, err = rs.SetPermits(ctx, "q", "n2/b", 3, 3, 3*time.Second)
	require.NoError(t, err)
	require.Equal(t, 3, n, "a stopped keeper gave its permit back")
}
