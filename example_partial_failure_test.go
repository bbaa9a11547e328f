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

// A handler fails some ids of its batch with FailIDs; the others are
// acknowledged. A failed id comes back after the worker's backoff with its
// retry count raised and its error.
func ExampleFailIDs() {
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

	done := make(chan struct{})
	attempts := map[string]int{} // handler calls of one shard never overlap
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "emails", Shards: 1, BatchSize: 10,
			RetryIn: orderly.LinearRetry(10 * time.Millisecond),
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				failed := map[string]error{}
				for _, j := range b.Jobs {
					attempts[j.ID]++
					fmt.Printf("%s: attempt %d, retry_count %d, last error %q\n", j.ID, attempts[j.ID], j.RetryCount, j.Error)
					if j.ID == "bounce" && attempts[j.ID] == 1 {
						failed[j.ID] = errors.New("mailbox full")
					}
				}
				if attempts["bounce"] == 2 {
					close(done)
				}
				return orderly.FailIDs(failed) // nil when nothing failed
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
	// Both jobs are due at once, so they come in one batch (earliest
	// perform_at first, ties by id).
	if err := c.Enqueue(ctx, "emails", client.Job{ID: "welcome"}, client.Job{ID: "bounce"}); err != nil {
		panic(err)
	}
	<-done
	// Output:
	// bounce: attempt 1, retry_count -1, last error ""
	// welcome: attempt 1, retry_count -1, last error ""
	// bounce: attempt 2, retry_count 0, last error "mailbox full"
}
