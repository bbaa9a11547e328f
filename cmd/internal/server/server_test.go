package server

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A Redis that may evict keys is refused with the flag that accepts it.
func TestOpenStoreRefusesEviction(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := &config.Config{Node: config.NodeConfig{Redis: srv.URL()}}
	_, _, err := openStore(context.Background(), cfg, log)
	require.ErrorContains(t, err, `maxmemory-policy must be noeviction (server has "allkeys-lru")`)
	require.ErrorContains(t, err, "set --allow-eviction (ORDERLY_ALLOW_EVICTION=true, or allow_eviction: true under node in the config file) to run on it anyway")

	cfg.Node.AllowEviction = true
	rdb, closeStore, err := openStore(context.Background(), cfg, log)
	require.NoError(t, err)
	require.NoError(t, rdb.Ping(context.Background()).Err())
	closeStore()
}

// openStore takes every URL form: a Cluster URL gets a Cluster client whose
// checks ran on every master; replicated durability needs a real Redis.
func TestOpenStoreURLs(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db := redistest.NewCluster(t)
	cfg := &config.Config{Node: config.NodeConfig{Redis: "redis+cluster://" + strings.Join(db.Addrs, ",")}}
	rdb, closeStore, err := openStore(context.Background(), cfg, log)
	require.NoError(t, err)
	require.IsType(t, &redis.ClusterClient{}, rdb)
	require.NoError(t, rdb.Set(context.Background(), db.Prefix+":{a}", "1", 0).Err())
	require.NoError(t, rdb.Set(context.Background(), db.Prefix+":{b}", "1", 0).Err())
	closeStore()

	cfg = &config.Config{Node: config.NodeConfig{Durability: config.DurabilityReplicated}}
	_, _, err = openStore(context.Background(), cfg, log)
	require.ErrorContains(t, err, "durability replicated needs a Redis with replicas")
}

// A queue's max_retry_count reaches the worker with the meaning it has in
// Go: the default, a count, or no retries.
func TestWorkersMaxRetryCount(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	queue := func(name string, maxRetry int) config.QueueConfig {
		return config.QueueConfig{Name: name, Shards: 1, BatchSize: 1, MaxRetryCount: maxRetry,
			Retry: config.RetryConfig{Policy: config.RetryLinear, Base: time.Second}, Handler: config.HandlerConfig{Type: config.HandlerNoop}}
	}
	workers, closeWebhooks, err := buildWorkers([]config.QueueConfig{
		queue("default", config.DefaultMaxRetryCount), queue("five", 5), queue("none", config.NoRetries), queue("zero", 0),
	}, log, nil, nil)
	require.NoError(t, err)
	defer closeWebhooks()
	got := map[string]int{}
	for _, w := range workers {
		got[w.Queue] = w.MaxRetryCount
	}
	require.Equal(t, map[string]int{"default": 25, "five": 5, "none": orderly.NoRetries, "zero": 0}, got)
}

// A queue's call deadline: an http handler's call is bounded by its request
// timeout unless the queue's timeout is shorter; max_payloads_per_call
// reaches the worker.
func TestWorkersCallDeadlineAndPayloadCap(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	queue := func(name string, timeout time.Duration, h config.HandlerConfig) config.QueueConfig {
		return config.QueueConfig{Name: name, Shards: 1, BatchSize: 1, Timeout: timeout, MaxPayloadsPerCall: 7, MaxConcurrency: 3, RateLimit: &config.RateLimitConfig{PerSecond: 2.5},
			Retry: config.RetryConfig{Policy: config.RetryLinear, Base: time.Second}, Handler: h}
	}
	web := func(d time.Duration) config.HandlerConfig {
		return config.HandlerConfig{Type: config.HandlerHTTP, URL: "http://127.0.0.1:1/x", Timeout: d}
	}
	workers, closeWebhooks, err := buildWorkers([]config.QueueConfig{
		queue("http-default", 0, web(30*time.Second)),
		queue("http-shorter-queue", 5*time.Second, web(30*time.Second)),
		queue("http-shorter-request", time.Minute, web(10*time.Second)),
		queue("noop", 0, config.HandlerConfig{Type: config.HandlerNoop}),
	}, log, nil, nil)
	require.NoError(t, err)
	defer closeWebhooks()
	got := map[string]time.Duration{}
	for _, w := range workers {
		got[w.Queue] = w.Timeout
		require.Equal(t, 7, w.MaxPayloadsPerCall)
		require.Equal(t, 3, w.MaxConcurrency)
		require.Equal(t, &orderly.RateLimit{PerSecond: 2.5, Burst: 3}, w.RateLimit, "burst: ceil(per_second)")
	}
	require.Equal(t, map[string]time.Duration{"http-default": 30 * time.Second, "http-shorter-queue": 5 * time.Second,
		"http-shorter-request": 10 * time.Second, "noop": 0}, got, "0: orderly.DefaultCallTimeout")
}
