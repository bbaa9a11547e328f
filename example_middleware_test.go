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

// Server middleware wraps every worker's handler, for logging, tracing,
// metrics or recovery; the first of Config.Middleware is the outermost.
func ExampleMiddleware() {
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

	trace := func(name string) orderly.Middleware {
		return func(next orderly.HandlerFunc) orderly.HandlerFunc {
			return func(ctx context.Context, b *orderly.Batch) error {
				fmt.Printf("%s: before %s %v\n", name, b.Queue, b.IDs())
				err := next(ctx, b)
				fmt.Printf("%s: after, err %v\n", name, err)
				return err
			}
		}
	}
	done := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []orderly.Middleware{trace("outer"), trace("inner")},
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				fmt.Println("handler")
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
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "orders", client.Job{ID: "order-1"}); err != nil {
		panic(err)
	}
	<-done
	// Stop waits for the running batch, middleware included.
	if err := node.Stop(ctx); err != nil {
		panic(err)
	}
	// Output:
	// outer: before orders [order-1]
	// inner: before orders [order-1]
	// handler
	// inner: after, err <nil>
	// outer: after, err <nil>
}
