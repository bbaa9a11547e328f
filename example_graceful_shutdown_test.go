package orderly_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Stop lets running batches finish (up to ShutdownTimeout or ctx's
// deadline); StopAndCancel, called while that stop runs (a second SIGTERM),
// cancels them at once. The cancelled batch goes back to the queue
// unchanged and is delivered again to the next node that serves its shard.
func ExampleNode_StopAndCancel() {
	rdb, closeRedis := exampleRedis()
	defer closeRedis()
	store, _ := redisstore.New(rdb, nil)

	running := make(chan struct{})
	node, _ := orderly.NewNode(store, &orderly.Config{
		Name:            "example",
		Logger:          slog.New(slog.DiscardHandler),
		ShutdownTimeout: time.Hour, // a graceful stop would wait for the handler
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
	ctx := context.Background()
	_ = node.Start(ctx)
	c, _ := client.New(rdb, nil)
	_ = c.Enqueue(ctx, "reports", client.Job{ID: "report-1"})
	<-running

	stopped := make(chan error, 1)
	go func() { stopped <- node.Stop(ctx) }() // the first SIGTERM
	// The second SIGTERM: cut the graceful stop short.
	if err := node.StopAndCancel(ctx); err != nil {
		fmt.Println("stop:", err)
	}
	fmt.Println("graceful stop returned:", <-stopped)

	st, _ := store.Stats(ctx, "reports")
	fmt.Println("queued again:", st[0].Length)
	// Output:
	// handler: context canceled
	// graceful stop returned: <nil>
	// queued again: 1
}
