package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/webhook"
)

// Every series of the configured queues exists from the start at zero; the
// build, waits, webhook answers, Redis latency and errors and per-shard lag
// are reported; and the whole exposition passes promlint.
func TestOperatorMetrics(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	m := metrics.New()
	db.Client.AddHook(m.RedisHook())
	raw, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	for _, q := range []string{"orders", "emails"} {
		require.NoError(t, raw.RegisterQueue(ctx, persistence.QueueSpec{Name: q, Shards: 2}))
	}
	m.InitQueues("orders", "emails")
	s := m.Store(raw)
	m.Watch(metrics.Source{
		Store:   s,
		Queues:  func() []string { return []string{"orders", "emails"} },
		Members: func() map[string]int { return map[string]int{"alive": 1} },
	})

	// At zero before any event.
	out := scrape(t, m)
	for _, line := range []string{
		`orderly_jobs_enqueued_total{queue="emails"} 0`,
		`orderly_jobs_dead_total{queue="emails"} 0`,
		`orderly_lease_losses_total{queue="emails"} 0`,
		`orderly_batch_duration_seconds_count{outcome="failed",queue="emails"} 0`,
		`orderly_webhook_requests_total{class="5xx",queue="emails"} 0`,
		`orderly_job_wait_seconds_count{queue="emails"} 0`,
		`orderly_cluster_members{state="draining"} 0`,
		`orderly_redis_errors_total{kind="io"} 0`,
		`orderly_build_info{goversion="` + runtime.Version() + `",version="` + orderly.Version + `"} 1`,
		`orderly_shard_lag_seconds{queue="emails",shard="1"} 0`,
	} {
		require.Contains(t, out, line)
	}

	// Per-shard lag: a job due a minute ago in one shard of orders.
	due := time.Now().Add(-time.Minute)
	require.NoError(t, s.Enqueue(ctx, "orders", []persistence.NewJob{{ID: "late", Payload: []byte(`1`), PerformAt: due}}))
	lagged := persistence.ShardOf("late", 2)

	// The wait from perform_at to the call's start.
	h := m.Middleware()(func(context.Context, *orderly.Batch) error { return nil })
	require.NoError(t, h(ctx, &orderly.Batch{Queue: "orders", Jobs: []orderly.Job{{ID: "a", PerformAt: time.Now().Add(-3 * time.Second)}}}))

	// Webhook answers by class, and a request without an answer.
	status := http.StatusInternalServerError
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	observe := func(code int) { m.WebhookAnswered("orders", code) }
	send, err := webhook.New(&webhook.Config{URL: srv.URL, Client: srv.Client(), Observe: observe})
	require.NoError(t, err)
	defer send.Close()
	b := &orderly.Batch{Queue: "orders", Delivery: "orders/0/1/1", Jobs: []orderly.Job{{ID: "a", Payloads: []orderly.Payload{{Data: []byte(`1`)}}}}}
	require.Error(t, send.Handle(ctx, b))
	status = http.StatusNoContent
	require.NoError(t, send.Handle(ctx, b))
	dead, err := webhook.New(&webhook.Config{URL: "http://127.0.0.1:1/none", Observe: observe, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer dead.Close()
	require.Error(t, dead.Handle(ctx, b))

	// An error reply from Redis: counted once.
	replies := func(out string) string {
		return regexp.MustCompile(`orderly_redis_errors_total\{kind="reply"\} (\d+)`).FindStringSubmatch(out)[1]
	}
	before := replies(scrape(t, m))
	require.Error(t, db.Client.Do(ctx, "NOSUCHCOMMAND").Err())

	out = scrape(t, m)
	for _, line := range []string{
		`orderly_job_wait_seconds_count{queue="orders"} 1`,
		`orderly_webhook_requests_total{class="5xx",queue="orders"} 1`,
		`orderly_webhook_requests_total{class="2xx",queue="orders"} 1`,
		`orderly_webhook_requests_total{class="error",queue="orders"} 1`,
		`orderly_webhook_requests_total{class="4xx",queue="orders"} 0`,
		`orderly_jobs_enqueued_total{queue="orders"} 1`,
	} {
		require.Contains(t, out, line)
	}
	require.Regexp(t, `orderly_job_wait_seconds_sum\{queue="orders"\} (2\.9|3\.|[4-9])`, out)
	require.Regexp(t, `orderly_redis_command_duration_seconds_count [1-9]`, out)
	require.Equal(t, itoa(atoi(t, before)+1), replies(out))
	lag := regexp.MustCompile(`orderly_shard_lag_seconds\{queue="orders",shard="` + itoa(lagged) + `"\} ([0-9.e+]+)`).FindStringSubmatch(out)
	require.NotNil(t, lag, out)
	require.Regexp(t, `^(59|6[0-9]|[7-9][0-9])`, lag[1], "about a minute of lag")
	require.Contains(t, out, `orderly_shard_lag_seconds{queue="orders",shard="`+itoa(1-lagged)+`"} 0`)

	problems, err := promlint.New(strings.NewReader(out)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "promlint")
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
