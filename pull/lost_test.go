package pull_test

import (
	"context"
	"encoding/json"
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

// §6.6: a lease held while the node stops ends when the drain deadline
// ends its call: the answer is refused with "lease lost", commits
// nothing, and the id is still there for the next owner.
func TestPullLeaseLostWhenTheNodeStops(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.New(db.Client, &client.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	b := pull.New(&pull.Config{Logger: log})
	node, err := orderly.NewNode(store, &orderly.Config{Logger: log, ShutdownTimeout: 300 * time.Millisecond,
		Workers: []orderly.Worker{{Queue: "q", Shards: 1, BatchSize: 1, Timeout: 20 * time.Second,
			Handler: b.Handler("q", pull.Options{BatchSize: 1, Lease: 10 * time.Second})}}})
	require.NoError(t, err)
	api, err := web.New(&web.Config{Store: store, Logger: log, Token: adminToken, Pull: b})
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	e := &env{t: t, store: store, client: c, broker: b, node: node, url: srv.URL}
	require.NoError(t, c.Enqueue(ctx, "q", client.Job{ID: "x"}))
	l := e.pullSome(adminToken, "q", 1)

	b.Stop()
	require.NoError(t, node.Stop(ctx)) // the drain deadline ends the held call
	status, out := e.answer(adminToken, "q", l.Lease, `{"dead":{"x":"no"}}`)
	require.Equal(t, http.StatusConflict, status, out)
	var conflict apiv1.PullConflict
	require.NoError(t, json.Unmarshal([]byte(out), &conflict))
	require.Equal(t, pull.ReasonLost, conflict.Reason)
	info, err := store.GetJob(ctx, "q", "x")
	require.NoError(t, err)
	require.Nil(t, info.Morgue, "the refused answer committed nothing")
	require.Zero(t, b.Stats()["q"].Held)
}
