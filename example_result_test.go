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
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A queue with RetainFinished keeps each id it acknowledges for a while,
// with the result its handler set: the lookup (GET
// /api/v1/queues/{q}/jobs/{id} over HTTP) shows it.
func ExampleJob_SetResult() {
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
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "payments", Shards: 1, RetainFinished: 24 * time.Hour,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, j := range b.Jobs {
					j.SetResult([]byte(`{"receipt":"r-` + j.ID + `"}`))
				}
				return nil
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

	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "payments", client.Job{ID: "pay-7"}); err != nil {
		panic(err)
	}
	for {
		info, err := store.GetJob(ctx, "payments", "pay-7")
		if err == nil && info.Finished != nil {
			fmt.Printf("%s: %d attempt, result %s\n", info.Finished.ID, info.Finished.Attempts, info.Finished.Result)
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Output:
	// pay-7: 1 attempt, result {"receipt":"r-pay-7"}
}
