package orderly_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Headers are string metadata carried with each payload
// (docs/contract.md §10): a client middleware stamps one on every job it
// enqueues, and a server middleware reads it before the handler runs.
func ExamplePayload_headers() {
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

	// Server side: read the headers of each payload.
	logTenant := func(next orderly.HandlerFunc) orderly.HandlerFunc {
		return func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				for _, p := range j.Payloads {
					fmt.Printf("%s %s: tenant %q, request %q\n", j.ID, p.Data, p.Headers["tenant"], p.Headers["request-id"])
				}
			}
			return next(ctx, b)
		}
	}
	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []orderly.Middleware{logTenant},
		Workers: []orderly.Worker{{
			Queue:   "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error { close(done); return nil },
		}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		panic(err)
	}

	// Client side: stamp a header on every job, keeping the caller's.
	stamp := func(next client.EnqueueFunc) client.EnqueueFunc {
		return func(ctx context.Context, queue string, jobs []client.Job) error {
			out := make([]client.Job, len(jobs))
			for i, j := range jobs {
				h := maps.Clone(j.Headers)
				if h == nil {
					h = map[string]string{}
				}
				h["request-id"] = "req-7"
				j.Headers = h
				out[i] = j
			}
			return next(ctx, queue, out)
		}
	}
	c, err := client.New(rdb, &client.Config{Middleware: []client.Middleware{stamp}})
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "orders",
		client.Job{ID: "order-1", Payload: []byte("created"), Score: client.Score(1), Headers: map[string]string{"tenant": "acme"}},
		client.Job{ID: "order-1", Payload: []byte("paid"), Score: client.Score(2)},
	); err != nil {
		panic(err)
	}
	<-done
	if err := node.Stop(ctx); err != nil {
		panic(err)
	}
	// Output:
	// order-1 created: tenant "acme", request "req-7"
	// order-1 paid: tenant "", request "req-7"
}
