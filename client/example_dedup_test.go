package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A queue with a dedup window (orderly.Worker.DedupWindow) acknowledges a
// job whose dedup key was seen for its id within the window without
// storing it: a producer that retries a send it is unsure of does not
// enqueue the job twice.
func ExampleClient_EnqueueReport() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	// A node serving "orders" with DedupWindow: 10 * time.Minute registers
	// the queue so; here nothing runs, so the example does.
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	spec := persistence.QueueSpec{Name: "orders", Shards: 5, DedupWindow: 10 * time.Minute}
	if err := store.RegisterQueue(ctx, spec); err != nil {
		panic(err)
	}

	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	paid := client.Job{ID: "order-1", Payload: []byte(`{"state":"paid"}`), DedupKey: "payment-7731"}
	for range 3 { // the same send, retried
		res, err := c.EnqueueReport(ctx, "orders", paid)
		if err != nil {
			panic(err)
		}
		fmt.Println("duplicates:", res.Duplicates)
	}
	info, err := store.GetJob(ctx, "orders", "order-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("payloads stored:", len(info.Queued.Payloads))
	// Output:
	// duplicates: 0
	// duplicates: 1
	// duplicates: 1
	// payloads stored: 1
}
