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

// A client enqueues without running a node. Scores order an id's payloads;
// payloads of one id merge while they wait, and for an equal payload the
// lower score wins.
func ExampleClient_Enqueue() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	// A node serving "orders" registers the queue; here nothing runs, so
	// the example does, and reads the queue back through the store.
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
		client.Job{ID: "order-1", Payload: []byte(`{"state":"paid"}`), Score: client.Score(20)},
		client.Job{ID: "order-1", Payload: []byte(`{"state":"created"}`), Score: client.Score(10)})
	if err != nil {
		panic(err)
	}
	// Later: the same payload again, with a lower score, and a new one.
	err = c.Enqueue(ctx, "orders",
		client.Job{ID: "order-1", Payload: []byte(`{"state":"paid"}`), Score: client.Score(15)},
		client.Job{ID: "order-1", Payload: []byte(`{"state":"shipped"}`), Score: client.Score(30)})
	if err != nil {
		panic(err)
	}
	info, err := store.GetJob(ctx, "orders", "order-1")
	if err != nil {
		panic(err)
	}
	for _, p := range info.Queued.Payloads {
		fmt.Printf("%g %s\n", p.Score, p.Data)
	}

	// One bad job rejects the call; nothing is written.
	err = c.Enqueue(ctx, "orders", client.Job{ID: "order-2"}, client.Job{ID: ""})
	fmt.Println(err, errors.Is(err, persistence.ErrInvalid))
	err = c.Enqueue(ctx, "invoices", client.Job{ID: "invoice-1"})
	fmt.Println(errors.Is(err, persistence.ErrUnknownQueue))
	// Output:
	// 10 {"state":"created"}
	// 15 {"state":"paid"}
	// 30 {"state":"shipped"}
	// jobs[1].id: must not be empty true
	// true
}
