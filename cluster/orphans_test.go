package cluster_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
	"github.com/orderlyhq/orderly/persistence"
)

// docs/contract.md §2.4: a shard of the node's queues that no node serves
// (its placement member does not) is adopted once it has been free longer
// than lease_ttl, served beside the share, reported by Unserved meanwhile,
// and given back when another node holds its lease or the node stops
// serving (draining).
func TestServiceAdoptsUnservedShards(t *testing.T) {
	nw := clustertest.NewNetwork()
	a, seed := start(t, nw, "a", nil, cluster.Meta{Queues: []string{"q"}})
	start(t, nw, "b", []string{seed}, cluster.Meta{Queues: []string{"q"}})
	require.Eventually(t, func() bool { return len(a.Members()) == 2 }, 5*time.Second, 10*time.Millisecond)

	var mu sync.Mutex // guards the fields below
	owners := map[int]string{0: "", 1: "", 2: "", 3: ""}
	var share, adopted []persistence.ShardRef
	setOwner := func(shard int, owner string) {
		mu.Lock()
		defer mu.Unlock()
		owners[shard] = owner
	}
	current := func() (s, ad []persistence.ShardRef) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(share), slices.Clone(adopted)
	}
	const ttl = 300 * time.Millisecond
	svc := cluster.NewService(cluster.ServiceConfig{
		Members: a, Self: "a", Queues: map[string]int{"q": 4}, LeaseTTL: ttl, Logger: slog.New(slog.DiscardHandler),
		Assign: func(s, ad []persistence.ShardRef) {
			mu.Lock()
			defer mu.Unlock()
			share, adopted = s, ad
			for _, r := range s {
				owners[r.Shard] = "a" // a serves its share at once
			}
		},
		Ping: func(context.Context) error { return nil },
		Owners: func(context.Context, string) ([]persistence.ShardOwner, error) {
			mu.Lock()
			defer mu.Unlock()
			var out []persistence.ShardOwner
			for s, o := range owners {
				out = append(out, persistence.ShardOwner{Shard: s, Owner: o})
			}
			return out, nil
		},
	})
	require.NoError(t, svc.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	// b never serves its two shards: a adopts them after lease_ttl (and
	// up to 500 ms of jitter).
	require.Eventually(t, func() bool { s, ad := current(); return len(s) == 2 && len(ad) == 2 }, 5*time.Second, 10*time.Millisecond)
	s, ad := current()
	require.Empty(t, slices.DeleteFunc(slices.Clone(ad), func(r persistence.ShardRef) bool { return !slices.Contains(s, r) }), "adopted shards are not a's own")
	require.Eventually(t, func() bool { return len(svc.Unserved(time.Now())) == 2 }, 5*time.Second, 10*time.Millisecond,
		"free longer than lease_ttl + OrphanSlack: reported (a's stand-in here never takes the lease)")

	// b takes one of them: a gives it back.
	setOwner(ad[0].Shard, "b")
	require.Eventually(t, func() bool { _, ad := current(); return len(ad) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return len(svc.Unserved(time.Now())) == 1 }, 5*time.Second, 10*time.Millisecond)

	// A draining node gives back what it adopted.
	require.NoError(t, a.SetMeta(context.Background(), func(m *cluster.Meta) { m.Draining = true }))
	require.Eventually(t, func() bool { _, ad := current(); return len(ad) == 0 }, 5*time.Second, 10*time.Millisecond)
}
