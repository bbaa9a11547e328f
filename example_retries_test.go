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

// A payload that keeps failing is retried MaxRetryCount times with the
// worker's backoff, then goes to the morgue; RetriesExhausted receives what
// went there. The morgue keeps it until an operator requeues or deletes it
// (orderly morgue, the HTTP API, the dashboard, or the store).
func ExampleWorker_retriesExhausted() {
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

	dead := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue:         "payments",
			MaxRetryCount: 2,                                         // 2 retries: 3 attempts [25]
			RetryIn:       orderly.LinearRetry(5 * time.Millisecond), // 5 ms, 10 ms, ... [LowkiqRetry]
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				fmt.Println("attempt, retry_count", b.Jobs[0].RetryCount)
				return errors.New("card declined") // fails the whole batch
			},
			RetriesExhausted: func(ctx context.Context, jobs []orderly.Job) {
				for _, j := range jobs {
					fmt.Printf("to the morgue: %s %s (%s)\n", j.ID, j.Payloads[0].Data, j.Error)
				}
				close(dead)
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
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "payments", client.Job{ID: "pay-9", Payload: []byte(`{"cents":1250}`)}); err != nil {
		panic(err)
	}
	<-dead
	if err := node.Stop(ctx); err != nil {
		panic(err)
	}

	st, err := store.Stats(ctx, "payments")
	if err != nil {
		panic(err)
	}
	fmt.Printf("queued %d, failed %d, in the morgue %d\n", st[0].Length, st[0].Failed, st[0].MorgueLength)
	// Output:
	// attempt, retry_count -1
	// attempt, retry_count 0
	// attempt, retry_count 1
	// to the morgue: pay-9 {"cents":1250} (card declined)
	// queued 0, failed 3, in the morgue 1
}
