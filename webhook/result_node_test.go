package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// A receiver's answer sets results with "result": on a queue with
// retain_finished, the node keeps them with the ids it acknowledges; a
// failed id keeps none (docs/contract.md §3.14).
func TestNodeKeepsWebhookResults(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ans := wire.Answer{Failed: map[string]string{}, Result: map[string]json.RawMessage{}}
		for _, j := range req.Jobs {
			ans.Result[j.ID] = json.RawMessage(`{"receipt": "r-` + j.ID + `"}`)
			if j.ID == "bad" {
				ans.Failed[j.ID] = "declined"
			}
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	defer srv.Close()

	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	store, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	sender, err := webhook.New(&webhook.Config{URL: srv.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer sender.Close() // after the node stopped: deferred calls run last first
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{Queue: "orders", Shards: 1, BatchSize: 2, Handler: sender.Handle,
			RetryIn: orderly.LinearRetry(time.Hour), RetainFinished: time.Hour}},
	})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	defer func() { require.NoError(t, node.Stop(ctx)) }()
	c, err := client.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(ctx, "orders", client.Job{ID: "bad"}, client.Job{ID: "ok"}))

	var ok persistence.JobInfo
	require.Eventually(t, func() bool {
		ok, err = store.GetJob(ctx, "orders", "ok")
		return err == nil && ok.Finished != nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, `{"receipt":"r-ok"}`, string(ok.Finished.Result))
	bad, err := store.GetJob(ctx, "orders", "bad")
	if !errors.Is(err, persistence.ErrNotFound) {
		require.NoError(t, err)
		require.Nil(t, bad.Finished, "a failed id keeps no result")
	}
}
