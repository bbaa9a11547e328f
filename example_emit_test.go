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

// A payments handler emits a notification job into another queue for each
// order it settles. The emit is committed with the order's
// acknowledgement, so a payment that fails notifies nobody.
func ExampleJob_Emit() {
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

	mails := make(chan string)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{
			{Queue: "payments", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, j := range b.Jobs {
					j.Emit(orderly.Emit{Queue: "mail", ID: "mail-" + j.ID, Payload: []byte("paid: " + j.ID)})
				}
				return nil
			}},
			{Queue: "mail", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, j := range b.Jobs {
					mails <- fmt.Sprintf("%s: %s", j.ID, j.Payloads[0].Data)
				}
				return nil
			}},
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Stop(ctx)

	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "payments", client.Job{ID: "order-42", Payload: []byte(`{"cents":500}`)}); err != nil {
		panic(err)
	}
	fmt.Println(<-mails)
	// Output:
	// mail-order-42: paid: order-42
}
