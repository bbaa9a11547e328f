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

// A Go program inspects a queue and acts on it without the HTTP API:
// listings as iterators over pages, a lookup, and the morgue's actions.
func ExampleClient_Jobs() {
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
	// A node serving the queue registers it; nothing runs here.
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 4}); err != nil {
		panic(err)
	}
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"order-3", "order-1", "order-2"} {
		if err := c.Enqueue(ctx, "orders", client.Job{ID: id, Payload: []byte(`{}`)}); err != nil {
			panic(err)
		}
	}
	for j, err := range c.Jobs(ctx, "orders", client.ListOptions{Order: persistence.OrderID, Limit: 2}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("queued", j.ID)
	}
	if err := c.Kill(ctx, "orders", "order-2"); err != nil {
		panic(err)
	}
	for e, err := range c.Morgue(ctx, "orders", client.ListOptions{}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("morgue", e.ID)
	}
	n, err := c.RequeueMorgue(ctx, "orders", "order-2")
	if err != nil {
		panic(err)
	}
	fmt.Println("requeued", n)
	info, err := c.GetJob(ctx, "orders", "order-2")
	if err != nil {
		panic(err)
	}
	fmt.Println("order-2 is on shard", info.Shard, "with", len(info.Queued.Payloads), "payload")
	// Output:
	// queued order-1
	// queued order-2
	// queued order-3
	// morgue order-2
	// requeued 1
	// order-2 is on shard 1 with 1 payload
}
