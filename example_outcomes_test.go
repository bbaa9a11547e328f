package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A handler chooses an id's fate with Snooze (come back later, no failure
// counted), Dead (to the morgue now, skipping the retries left) and Discard
// (dropped and counted), for the whole call or per id in FailIDs; wrapped
// ones count too.
func ExampleSnooze() {
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

	dead := make(chan string, 1)
	again := make(chan orderly.Job, 1)
	calls := 0 // handler calls of one shard never overlap
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "orders", Shards: 1, BatchSize: 10,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				calls++
				if calls > 1 {
					again <- b.Jobs[0]
					return nil
				}
				return orderly.FailIDs(map[string]error{
					"later":  orderly.Snooze(20 * time.Millisecond),
					"poison": fmt.Errorf("order 7: %w", orderly.Dead(errors.New("unknown product"))),
					"stale":  orderly.Discard(errors.New("superseded")),
				})
			},
			RetriesExhausted: func(ctx context.Context, jobs []orderly.Job) {
				dead <- jobs[0].ID + ": " + jobs[0].Error
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
	if err := c.Enqueue(ctx, "orders", client.Job{ID: "later"}, client.Job{ID: "poison"}, client.Job{ID: "stale"}); err != nil {
		panic(err)
	}
	fmt.Println("dead:", <-dead)
	j := <-again
	fmt.Printf("back: %s, retry_count %d\n", j.ID, j.RetryCount)
	// Output:
	// dead: poison: unknown product
	// back: later, retry_count -1
}
