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
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// exampleRedis starts an in-memory Redis (miniredis) for the examples; a
// real program connects to its Redis instead.
func exampleRedis() (*redis.Client, func()) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { rdb.Close(); mr.Close() }
}

// A worker handles one queue. Payloads of one id, enqueued in any order,
// reach the handler merged and in score order, and no two handler calls
// ever hold the same id.
func Example() {
	rdb, closeRedis := exampleRedis()
	defer closeRedis()
	store, _ := redisstore.New(rdb, nil)

	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Name:   "example",
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, j := range b.Jobs {
					for _, p := range j.Payloads {
						fmt.Printf("%s: %s\n", j.ID, p.Data)
					}
				}
				close(done)
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

	c, _ := client.New(rdb, nil)
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

// A handler fails some ids of its batch with FailIDs; the others are
// acknowledged. Failed ids are retried with the worker's backoff.
func ExampleFailIDs() {
	rdb, closeRedis := exampleRedis()
	defer closeRedis()
	store, _ := redisstore.New(rdb, nil)

	done := make(chan struct{})
	attempts := map[string]int{}
	node, _ := orderly.NewNode(store, &orderly.Config{
		Name:   "example",
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "emails", Shards: 1, BatchSize: 10,
			RetryIn: orderly.LinearRetry(10 * time.Millisecond),
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				failed := map[string]error{}
				for _, j := range b.Jobs {
					attempts[j.ID]++
					fmt.Printf("%s attempt %d (retry_count %d)\n", j.ID, attempts[j.ID], j.RetryCount)
					if j.ID == "bounce" && attempts[j.ID] == 1 {
						failed[j.ID] = errors.New("mailbox full")
					}
				}
				if attempts["bounce"] == 2 {
					close(done)
				}
				return orderly.FailIDs(failed)
			},
		}},
	})
	ctx := context.Background()
	_ = node.Start(ctx)
	defer node.Stop(ctx)
	c, _ := client.New(rdb, nil)
	_ = c.Enqueue(ctx, "emails", client.Job{ID: "bounce"}, client.Job{ID: "welcome"})
	<-done
	// Output:
	// bounce attempt 1 (retry_count -1)
	// welcome attempt 1 (retry_count -1)
	// bounce attempt 2 (retry_count 0)
}

// A program that embeds a node can enqueue by actor message: the node's
// well-known enqueue actor, which other processes reach through protoactor
// remote (Config.ActorAddr), answers Enqueue with EnqueueResult.
func ExampleNode_Ask() {
	rdb, closeRedis := exampleRedis()
	defer closeRedis()
	store, _ := redisstore.New(rdb, nil)
	done := make(chan string, 1)
	node, _ := orderly.NewNode(store, &orderly.Config{
		Name:   "example",
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				done <- string(b.Jobs[0].Payloads[0].Data)
				return nil
			},
		}},
	})
	ctx := context.Background()
	_ = node.Start(ctx)
	defer node.Stop(ctx)

	res, err := node.Ask(ctx, &messages.Enqueue{
		Queue: "orders",
		Jobs:  []*messages.Job{{Id: "order-7", Payload: []byte(`{"state":"shipped"}`)}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("enqueued:", res.(*messages.EnqueueResult).GetEnqueued())
	fmt.Println("handled:", <-done)
	// Output:
	// enqueued: 1
	// handled: {"state":"shipped"}
}
