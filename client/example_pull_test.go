package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// A pull worker processes a pull queue through a node's HTTP API: it
// needs no port of its own. Here the node and its API run in the same
// process; in production the worker only knows the node's URL and its
// queue's worker token.
func ExamplePullWorker() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	log := slog.New(slog.DiscardHandler)
	broker := pull.New(&pull.Config{Logger: log})
	node, err := orderly.NewNode(store, &orderly.Config{Logger: log, Workers: []orderly.Worker{{
		Queue: "emails", Shards: 2, Timeout: time.Minute,
		Handler: broker.Handler("emails", pull.Options{Lease: 20 * time.Second})}}})
	if err != nil {
		panic(err)
	}
	api, err := web.New(&web.Config{Store: store, Logger: log, Pull: broker,
		WorkerTokens: map[string]string{"emails": "w-emails"}, Token: "admin"})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = node.Stop(ctx) }()
	defer broker.Stop() // before the node: waiting pulls end, unpulled batches go back

	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "emails",
		client.Job{ID: "user-1", Payload: []byte(`"welcome"`), Score: client.Score(1)},
		client.Job{ID: "user-1", Payload: []byte(`"receipt"`), Score: client.Score(2)}); err != nil {
		panic(err)
	}

	wctx, stop := context.WithCancel(ctx)
	seen := 0
	w := &client.PullWorker{URL: srv.URL, Queue: "emails", Token: "w-emails", Wait: time.Second,
		Handle: func(_ context.Context, jobs []wire.Job) (*wire.Answer, error) {
			for _, j := range jobs {
				for _, p := range j.Payloads {
					fmt.Println(j.ID, string(p.Data))
					seen++
				}
			}
			if seen == 2 {
				stop() // Run returns once this answer is sent
			}
			return nil, nil // every id done
		}}
	if err := w.Run(wctx); err != nil {
		panic(err)
	}
	// Output:
	// user-1 "welcome"
	// user-1 "receipt"
}
