package metrics_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// lagShards returns the shard labels of queue's orderly_shard_lag_seconds.
func lagShards(out, queue string) []int {
	var shards []int
	re := regexp.MustCompile(`orderly_shard_lag_seconds\{queue="` + queue + `",shard="(\d+)"\}`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		shards = append(shards, n)
	}
	slices.Sort(shards)
	return shards
}

func span(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// While a reshard runs, orderly_reshard_moved_ids and _left_ids report its
// progress (absent otherwise), and the per-shard lag is labelled by the
// shards' real numbers: both generations while it runs, the new ones
// after (docs/contract.md §3.17).
func TestReshardMetrics(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	raw, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, raw.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 4}))
	m := metrics.New()
	m.Watch(metrics.Source{Store: m.Store(raw), Queues: func() []string { return []string{"q"} }})
	jobs := make([]persistence.NewJob, 5)
	for i := range jobs {
		jobs[i] = persistence.NewJob{ID: fmt.Sprintf("id-%d", i), Payload: []byte("p")}
	}
	require.NoError(t, raw.Enqueue(ctx, "q", jobs))

	out := scrape(t, m)
	require.NotContains(t, out, "orderly_reshard_")
	require.Equal(t, span(0, 3), lagShards(out, "q"))

	_, err = raw.Reshard(ctx, "q", 7) // shards 4..10
	require.NoError(t, err)
	out = scrape(t, m)
	require.Contains(t, out, `orderly_reshard_left_ids{queue="q"} 5`)
	require.Contains(t, out, `orderly_reshard_moved_ids{queue="q"} 0`)
	require.Equal(t, span(0, 10), lagShards(out, "q"))

	drain(t, raw, "q", 0, 3)
	out = scrape(t, m)
	require.NotContains(t, out, "orderly_reshard_")
	require.Equal(t, span(4, 10), lagShards(out, "q"), "labelled by shard number, not by index")

	_, err = raw.Reshard(ctx, "q", 2) // shards 0..1, draining 4..10
	require.NoError(t, err)
	out = scrape(t, m)
	require.Contains(t, out, `orderly_reshard_left_ids{queue="q"} 5`)
	require.Equal(t, append(span(0, 1), span(4, 10)...), lagShards(out, "q"), "no shard 2 or 3 between the generations")
}

// drain drains shards from..to of queue as their owner would, and ends the
// reshard.
func drain(t *testing.T, s *redisstore.Store, queue string, from, to int) {
	t.Helper()
	ctx := context.Background()
	for shard := from; shard <= to; shard++ {
		lease, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: queue, Shard: shard}, "test", time.Minute)
		require.NoError(t, err)
		for range 100 {
			res, err := s.DrainShard(ctx, lease, 100)
			require.NoError(t, err)
			if res.Done {
				break
			}
		}
	}
	done, err := s.FinishReshard(ctx, queue)
	require.NoError(t, err)
	require.True(t, done)
}
