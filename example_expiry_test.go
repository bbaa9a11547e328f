package orderly_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A payload may expire (docs/contract.md §3.15): not handed to a handler
// by its expiry, it is discarded when its shard fetches it, counted in the
// queue's Expired, and never delivered. The id's other payloads are
// handled as usual.
func Example_expiry() {
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
	ctx := context.Background()
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "mail", Shards: 1}); err != nil {
		panic(err)
	}
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	// A one-time code that nobody sent in time, and a receipt that keeps.
	if err := c.Enqueue(ctx, "mail",
		client.Job{ID: "user-9", Payload: []byte(`{"otp":"123456"}`), ExpiresAt: time.Now().Add(-time.Second)},
		client.Job{ID: "user-9", Payload: []byte(`{"receipt":"r-1"}`), ExpiresIn: time.Hour},
	); err != nil {
		panic(err)
	}

	got := make(chan string, 1)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{Queue: "mail", Shards: 1,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, p := range b.Jobs[0].Payloads {
					got <- string(p.Data)
				}
				return nil
			}}},
	})
	if err != nil {
		panic(err)
	}
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Stop(ctx)
	fmt.Println("delivered:", <-got)
	for { // the settle after the call counts the expired payload
		st, err := c.Stats(ctx, "mail")
		if err != nil {
			panic(err)
		}
		if st[0].Expired > 0 {
			fmt.Println("expired:", st[0].Expired)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// delivered: {"receipt":"r-1"}
	// expired: 1
}
