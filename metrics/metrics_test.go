package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	b, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(b)
}

func TestMetricsCountAndScrape(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	raw, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, raw.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 1}))
	m := metrics.New()
	s := m.Store(raw)
	m.Watch(metrics.Source{
		Store:      s,
		Queues:     func() []string { return []string{"orders"} },
		Shards:     func(context.Context) (map[string]int, error) { return map[string]int{"orders": 1}, nil },
		Members:    func() map[string]int { return map[string]int{"alive": 3, "dead": 1} },
		RoundTrips: func() (int64, int64) { c := raw.Counters(); return c.RoundTrips, c.Commands },
	})

	require.NoError(t, s.Enqueue(ctx, "orders", []persistence.NewJob{{ID: "a"}, {ID: "b"}, {ID: "c"}}))
	l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "orders"}, "n1", time.Minute)
	require.NoError(t, err)
	res, err := s.Advance(ctx, l, persistence.AdvanceRequest{Fetch: 3, NextSeq: 1, MaxRetryCount: 0})
	require.NoError(t, err)
	_, err = s.Advance(ctx, l, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: 2, MaxRetryCount: 0,
		Failures: []persistence.Failure{{ID: "b", Error: "x"}}})
	require.NoError(t, err)
	m.BatchDone(persistence.ShardRef{Queue: "orders"}, 3, 1, 20*time.Millisecond, nil)
	m.BatchDone(persistence.ShardRef{Queue: "orders"}, 1, 0, 2*time.Second, errors.New("boom"))
	m.BatchDone(persistence.ShardRef{Queue: "orders"}, 2, 1, time.Millisecond, nil) // a kept observer
	m.LeaseLost(persistence.ShardRef{Queue: "orders"})
	m.SettleRetried(persistence.ShardRef{Queue: "orders"})
	m.SettleRetried(persistence.ShardRef{Queue: "orders"})
	m.WindowLost(persistence.ShardRef{Queue: "orders"}, 5)
	m.HandlerStuck(persistence.ShardRef{Queue: "orders", Shard: 2}, 42*time.Second)
	m.HandlerStuck(persistence.ShardRef{Queue: "orders", Shard: 3}, time.Second)
	m.HandlerStuck(persistence.ShardRef{Queue: "orders", Shard: 3}, 0) // returned

	out := scrape(t, m)
	require.NotContains(t, out, `orderly_handler_stuck_seconds{queue="orders",shard="3"}`)
	for _, line := range []string{
		`orderly_jobs_enqueued_total{queue="orders"} 3`,
		`orderly_jobs_processed_total{queue="orders"} 2`,
		`orderly_jobs_failed_total{queue="orders"} 1`,
		`orderly_jobs_dead_total{queue="orders"} 1`,
		`orderly_batch_duration_seconds_count{outcome="partial",queue="orders"} 2`,
		`orderly_batch_duration_seconds_count{outcome="failed",queue="orders"} 1`,
		`orderly_lease_losses_total{queue="orders"} 1`,
		`orderly_settle_retries_total{queue="orders"} 2`,
		`orderly_deliveries_repeated_total{queue="orders"} 5`,
		`orderly_handler_stuck_seconds{queue="orders",shard="2"} 42`,
		`orderly_shards_owned{queue="orders"} 1`,
		`orderly_cluster_members{state="alive"} 3`,
		`orderly_queue_length{queue="orders"} 0`,
		`orderly_queue_morgue_length{queue="orders"} 1`,
		`orderly_queue_processed_total{queue="orders"} 2`,
		`orderly_store_up 1`,
		`go_goroutines `,
	} {
		require.Contains(t, out, line)
	}
	require.Regexp(t, `orderly_redis_round_trips_total [1-9]`, out)
	require.Contains(t, out, `orderly_queue_paused{queue="orders"} 0`)

	require.NoError(t, s.SetPaused(ctx, "orders", true))
	require.Contains(t, scrape(t, m), `orderly_queue_paused{queue="orders"} 1`)
}

// A scrape while Redis is down reports the store as down and still answers.
func TestScrapeWithStoreDown(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	raw, err := redisstore.New(srv.Client(t), nil)
	require.NoError(t, err)
	require.NoError(t, raw.RegisterQueue(context.Background(), persistence.QueueSpec{Name: "q", Shards: 1}))
	m := metrics.New()
	m.Watch(metrics.Source{Store: raw, Queues: func() []string { return []string{"q"} }})
	require.Contains(t, scrape(t, m), "orderly_store_up 1")
	srv.Kill(t)
	out := scrape(t, m)
	require.Contains(t, out, "orderly_store_up 0")
	require.False(t, strings.Contains(out, `orderly_queue_length{queue="q"}`))
}

// The counting wrapper keeps what the node looks for on its store: the
// connection warm-up and the store's identity, which the node advertises
// to its cluster (a store of another identity is a foreign member).
func TestStoreWrapperKeepsWarmAndIdentity(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	raw, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	var s any = metrics.New().Store(raw)

	w, ok := s.(interface {
		Warm(ctx context.Context, conns int) error
	})
	require.True(t, ok, "the wrapper has Warm")
	require.NoError(t, w.Warm(ctx, 3))
	require.GreaterOrEqual(t, db.Client.PoolStats().TotalConns, uint32(3), "the wrapped store's connections are open")

	id, ok := s.(persistence.Identifier)
	require.True(t, ok, "the wrapper has StoreID")
	got, err := id.StoreID(ctx)
	require.NoError(t, err)
	want, err := raw.StoreID(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, want)
	require.Equal(t, want, got, "the wrapper answers the wrapped store's identity")

	_, ok = s.(persistence.Resharder)
	require.True(t, ok, "the wrapper keeps the store's Resharder: nodes on it reshard")
	_, ok = s.(persistence.EnqueueReporter)
	require.True(t, ok, "the wrapper still reports enqueues")
}

// The counting wrapper keeps a store's resharding (the node drives the
// drain of a resharded queue through the wrapped store) and adds none to
// a store that cannot reshard.
func TestStoreWrapperKeepsResharder(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	raw, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, raw.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 2}))
	var s any = metrics.New().Store(raw)
	rs, ok := s.(persistence.Resharder)
	require.True(t, ok, "the wrapper of a store that reshards reshards")
	sh, err := rs.Reshard(ctx, "orders", 3)
	require.NoError(t, err)
	require.Equal(t, 3, sh.Current.Count)
	got, err := raw.Shape(ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, sh, got, "the reshard reached the wrapped store")

	_, ok = metrics.New().Store(struct{ persistence.Store }{raw}).(persistence.Resharder)
	require.False(t, ok, "the wrapper of a store that cannot reshard cannot either")
}
