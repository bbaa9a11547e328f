package orderly_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Among the due ids of a shard, those of priority 1 are fetched first,
// then 2, 3 and 4 (docs/contract.md §3.16); the payloads of one id stay
// in score order whatever their priorities.
func Example_priority() {
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
	// Queued before any node runs: the weekly report first, the alert last.
	for _, j := range []client.Job{
		{ID: "weekly-report", Priority: 4},
		{ID: "digest-42", Priority: 2},
		{ID: "password-reset"}, // no priority: 1
	} {
		if err := c.Enqueue(ctx, "mail", j); err != nil {
			panic(err)
		}
	}

	order := make(chan string, 3)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{Queue: "mail", Shards: 1, BatchSize: 1,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				order <- b.Jobs[0].ID
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
	for range 3 {
		fmt.Println(<-order)
	}
	// Output:
	// password-reset
	// digest-42
	// weekly-report
}
