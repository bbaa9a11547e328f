package client_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/embedded"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A client enqueues without running a node; middleware wraps every Enqueue.
func ExampleClient_Enqueue() {
	srv, _ := embedded.Start()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	// A node serving "orders" registers the queue; here we do it directly.
	store, _ := redisstore.New(rdb, nil)
	_ = store.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 5})

	logJobs := func(next client.EnqueueFunc) client.EnqueueFunc {
		return func(ctx context.Context, queue string, jobs []client.Job) error {
			fmt.Printf("enqueue %d jobs to %s\n", len(jobs), queue)
			return next(ctx, queue, jobs)
		}
	}
	c, _ := client.New(rdb, &client.Config{Middleware: []client.Middleware{logJobs}})
	err := c.Enqueue(ctx, "orders",
		client.Job{ID: "order-1", Payload: []byte(`{"state":"created"}`), Score: client.Score(1)},
		client.Job{ID: "order-1", Payload: []byte(`{"state":"paid"}`), Score: client.Score(2)},
	)
	fmt.Println("error:", err)

	err = c.Enqueue(ctx, "orders", client.Job{ID: ""})
	fmt.Println("error:", err)
	// Output:
	// enqueue 2 jobs to orders
	// error: <nil>
	// enqueue 1 jobs to orders
	// error: jobs[0].id: must not be empty
}
