package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Cancel stops an id everywhere (docs/contract.md §3.13): its queued
// payloads go to the morgue (or are dropped with CancelDelete), and a
// handler call in flight for it, on whichever node, is cancelled. Here
// nothing runs, so only the queued payloads are concerned.
func ExampleClient_Cancel() {
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
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	err = c.Enqueue(ctx, "orders",
		client.Job{ID: "order-1", Payload: []byte("paid")},
		client.Job{ID: "order-1", Payload: []byte("shipped")},
		client.Job{ID: "order-2", Payload: []byte("paid")})
	if err != nil {
		panic(err)
	}
	res, err := c.Cancel(ctx, "orders", "order-1")
	if err != nil {
		panic(err)
	}
	fmt.Printf("order-1: %d payloads to the morgue, in flight: %v\n", res.Payloads, res.InFlight)
	res, err = c.Cancel(ctx, "orders", "order-2", client.CancelDelete())
	if err != nil {
		panic(err)
	}
	fmt.Printf("order-2: %d payload dropped\n", res.Payloads)
	_, err = c.Cancel(ctx, "orders", "order-2")
	fmt.Println(errors.Is(err, persistence.ErrNotFound))
	// Output:
	// order-1: 2 payloads to the morgue, in flight: false
	// order-2: 1 payload dropped
	// true
}
