package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
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

// A receiver's answer emits jobs with "from": a node commits the emits of
// the ids that succeeded and relays them into the target queue; those of a
// failed id are dropped with it (docs/contract.md §6.4, §11).
func TestNodeCommitsWebhookEmits(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ans := wire.Answer{Failed: map[string]string{}}
		for _, j := range req.Jobs {
			ans.Emit = append(ans.Emit, wire.Emit{From: j.ID, Queue: "notify", ID: "n-" + j.ID, Payload: json.RawMessage(`{"from":"` + j.ID + `"}`)})
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
	var mu sync.Mutex
	got := map[string]string{}
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{
			{Queue: "orders", Shards: 1, BatchSize: 2, Handler: sender.Handle, RetryIn: orderly.LinearRetry(time.Hour)},
			{Queue: "notify", Shards: 2, Handler: func(_ context.Context, b *orderly.Batch) error {
				mu.Lock()
				defer mu.Unlock()
				for _, j := range b.Jobs {
					got[j.ID] = string(j.Payloads[0].Data)
				}
				return nil
			}},
		},
	})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	defer func() { require.NoError(t, node.Stop(ctx)) }()
	c, err := client.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(ctx, "orders", client.Job{ID: "bad"}, client.Job{ID: "ok"}))

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["n-ok"] != ""
	}, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	// Both ids were in one delivery and one settle: had bad's emit been
	// committed, the same relay would have brought it.
	require.Equal(t, map[string]string{"n-ok": `{"from":"ok"}`}, got, fmt.Sprint(got))
	_, err = store.GetJob(ctx, "notify", "n-bad")
	require.ErrorIs(t, err, persistence.ErrNotFound, "neither handled nor queued")
}
