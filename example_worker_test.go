package orderly_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A worker handles one queue. Payloads of one id, enqueued in any order,
// reach the handler merged and in score order, and no two handler calls
// ever hold the same id.
func Example() {
	// An in-memory Redis for the example; a program connects to its Redis.
	mr, err := miniredis.Run()
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
	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, j := range b.Jobs { // each id once
					for _, p := range j.Payloads { // in score order
						fmt.Printf("%s: %s\n", j.ID, p.Data)
					}
				}
				close(done)
				return nil // acknowledges every id of the batch
			},
		}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Stop(ctx)

	// Producers need only the client (or the HTTP API).
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	err = c.Enqueue(ctx, "orders",
		client.Job{ID: "order-1", Payload: []byte("paid"), Score: client.Score(2)},
		client.Job{ID: "order-1", Payload: []byte("created"), Score: client.Score(1)})
	if err != nil {
		panic(err)
	}
	<-done
	// Output:
	// order-1: created
	// order-1: paid
}
