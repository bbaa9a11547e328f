package client_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Client middleware wraps every Enqueue, for logging, tracing or to stamp
// payloads; the first of Config.Middleware is the outermost. A middleware
// may refuse a call by returning an error without calling next.
func ExampleMiddleware() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 5}); err != nil {
		panic(err)
	}

	logJobs := func(next client.EnqueueFunc) client.EnqueueFunc {
		return func(ctx context.Context, queue string, jobs []client.Job) error {
			err := next(ctx, queue, jobs)
			fmt.Printf("enqueue %d jobs to %s: %v\n", len(jobs), queue, err)
			return err
		}
	}
	stamp := func(next client.EnqueueFunc) client.EnqueueFunc {
		return func(ctx context.Context, queue string, jobs []client.Job) error {
			out := make([]client.Job, len(jobs)) // the caller's jobs stay as they are
			for i, j := range jobs {
				j.Payload = append([]byte("v1:"), j.Payload...)
				out[i] = j
			}
			return next(ctx, queue, out)
		}
	}
	c, err := client.New(rdb, &client.Config{Middleware: []client.Middleware{logJobs, stamp}})
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "orders", client.Job{ID: "order-1", Payload: []byte("paid")}); err != nil {
		panic(err)
	}
	_ = c.Enqueue(ctx, "orders", client.Job{ID: ""})

	info, err := store.GetJob(ctx, "orders", "order-1")
	if err != nil {
		panic(err)
	}
	fmt.Printf("stored: %s\n", info.Queued.Payloads[0].Data)
	// Output:
	// enqueue 1 jobs to orders: <nil>
	// enqueue 1 jobs to orders: jobs[0].id: must not be empty
	// stored: v1:paid
}
