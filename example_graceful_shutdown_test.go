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

// Stop is graceful (the first SIGTERM): shards stop fetching, a running
// batch may finish until ShutdownTimeout (or ctx's earlier deadline) and is
// acknowledged, and the leases are released so that other nodes take the
// shards over at once.
func ExampleNode_Stop() {
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

	running, release := make(chan struct{}), make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:          slog.New(slog.DiscardHandler),
		ShutdownTimeout: 10 * time.Second, // [25 s]
		Workers: []orderly.Worker{{
			Queue: "reports",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				close(running)
				<-release // the work takes a while
				fmt.Println("handler: done, context:", ctx.Err())
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
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "reports", client.Job{ID: "report-1"}); err != nil {
		panic(err)
	}
	<-running

	stopped := make(chan error, 1)
	go func() { stopped <- node.Stop(ctx) }()
	close(release) // Stop waits for the running batch
	fmt.Println("stop:", <-stopped)

	st, err := store.Stats(ctx, "reports")
	if err != nil {
		panic(err)
	}
	fmt.Printf("processed %d, queued %d\n", st[0].Processed, st[0].Length)
	// Output:
	// handler: done, context: <nil>
	// stop: <nil>
	// processed 1, queued 0
}

// StopAndCancel is the hard stop: it cancels running handlers at once. Called
// while a graceful Stop runs (a second SIGTERM), it cuts that stop short.
// A cancelled batch goes back to the queue unchanged (its retry count too)
// and is delivered again to the next node that serves its shard.
func ExampleNode_StopAndCancel() {
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

	running := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:          slog.New(slog.DiscardHandler),
		ShutdownTimeout: time.Hour, // a graceful stop alone would wait for the handler
		Workers: []orderly.Worker{{
			Queue: "reports",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				close(running)
				<-ctx.Done() // a long job that honours its context
				fmt.Println("handler:", ctx.Err())
				return ctx.Err()
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
	if err := c.Enqueue(ctx, "reports", client.Job{ID: "report-1"}); err != nil {
		panic(err)
	}
	<-running

	stopped := make(chan error, 1)
	go func() { stopped <- node.Stop(ctx) }() // the first SIGTERM
	// The second SIGTERM: cut the graceful stop short.
	if err := node.StopAndCancel(ctx); err != nil {
		fmt.Println("stop:", err)
	}
	fmt.Println("graceful stop returned:", <-stopped)

	st, err := store.Stats(ctx, "reports")
	if err != nil {
		panic(err)
	}
	fmt.Printf("processed %d, failed %d, queued again %d\n", st[0].Processed, st[0].Failed, st[0].Length)
	// Output:
	// handler: context canceled
	// graceful stop returned: <nil>
	// processed 0, failed 0, queued again 1
}
