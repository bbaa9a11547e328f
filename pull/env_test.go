package pull_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// Tokens of the test API.
const (
	adminToken  = "admin-token"
	workerToken = "worker-token-q"
)

// env is a real node on real Redis with pull queues "q" (batch 5, one
// shard), "slow" (short lease and timeout, one shard, batch 1), "many"
// (4 shards, batch 1) and "wide" (one shard, batch 1, every call of a
// window at once), served by the HTTP API.
type env struct {
	t      *testing.T
	store  *redisstore.Store
	client *client.Client
	broker *pull.Broker
	node   *orderly.Node
	url    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	retry := orderly.LinearRetry(10 * time.Millisecond)
	return startEnv(t, func(b *pull.Broker) orderly.Config {
		return orderly.Config{Concurrency: 8, Workers: []orderly.Worker{
			{Queue: "q", Shards: 1, BatchSize: 5, Timeout: 20 * time.Second, RetryIn: orderly.LinearRetry(time.Hour),
				Handler: b.Handler("q", pull.Options{BatchSize: 5, Lease: 10 * time.Second})},
			{Queue: "slow", Shards: 1, BatchSize: 1, Timeout: 4 * time.Second, RetryIn: retry,
				Handler: b.Handler("slow", pull.Options{BatchSize: 1, Lease: 300 * time.Millisecond})},
			{Queue: "counters", Shards: 1, BatchSize: 1, State: true, Timeout: 20 * time.Second, RetryIn: retry,
				Handler: b.Handler("counters", pull.Options{BatchSize: 1, Lease: 10 * time.Second})},
			{Queue: "notify", Shards: 1, Handler: func(context.Context, *orderly.Batch) error { return nil }},
			{Queue: "many", Shards: 4, BatchSize: 1, Timeout: 20 * time.Second, RetryIn: retry,
				Handler: b.Handler("many", pull.Options{BatchSize: 1, Lease: 10 * time.Second})},
			{Queue: "wide", Shards: 1, BatchSize: 1, Prefetch: 10, ConcurrentCalls: 100, Timeout: 20 * time.Second, RetryIn: retry,
				Handler: b.Handler("wide", pull.Options{BatchSize: 1, Lease: 10 * time.Second})},
		}}
	})
}

// startEnv starts a real node on real Redis, configured by config with a
// new broker (its Logger is set here), served by the HTTP API with the
// test tokens.
func startEnv(t *testing.T, config func(b *pull.Broker) orderly.Config) *env {
	t.Helper()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.New(db.Client, &client.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	b := pull.New(&pull.Config{Logger: log})
	cfg := config(b)
	cfg.Logger = log
	node, err := orderly.NewNode(store, &cfg)
	require.NoError(t, err)
	api, err := web.New(&web.Config{Store: store, Logger: log, Token: adminToken, Pull: b,
		WorkerTokens: map[string]string{"q": workerToken}})
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	t.Cleanup(func() {
		b.Stop()
		require.NoError(t, node.Stop(ctx))
		srv.Close()
	})
	return &env{t: t, store: store, client: c, broker: b, node: node, url: srv.URL}
}

// do sends a request with token and returns the status and body.
func (e *env) do(token, method, path, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, bytes.NewBufferString(body))
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, string(out)
}

// pull pulls from queue; nil on 204.
func (e *env) pull(token, queue string, maxIDs int, wait float64) *apiv1.PullLease {
	e.t.Helper()
	body, _ := json.Marshal(apiv1.PullRequest{MaxIDs: maxIDs, Wait: wait})
	status, out := e.do(token, "POST", "/api/v1/queues/"+queue+"/pull", string(body))
	if status == http.StatusNoContent {
		return nil
	}
	require.Equal(e.t, http.StatusOK, status, out)
	var l apiv1.PullLease
	require.NoError(e.t, json.Unmarshal([]byte(out), &l))
	return &l
}

// pullSome pulls until a lease comes.
func (e *env) pullSome(token, queue string, maxIDs int) *apiv1.PullLease {
	e.t.Helper()
	for {
		if l := e.pull(token, queue, maxIDs, 5); l != nil {
			return l
		}
	}
}

// answer answers a lease of queue.
func (e *env) answer(token, queue, lease, body string) (int, string) {
	e.t.Helper()
	return e.do(token, "POST", "/api/v1/queues/"+queue+"/pull/"+lease+"/answer", body)
}

// ids returns the ids of a lease's jobs.
func ids(l *apiv1.PullLease) []string {
	out := make([]string, len(l.Jobs))
	for i, j := range l.Jobs {
		out[i] = j.ID
	}
	return out
}
