package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A client with a spool keeps the enqueues that Redis cannot take in a
// local file, answers them as spooled, and sends them, in order, once
// Redis is back (docs/contract.md §6.7).
func ExampleSpoolConfig() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	// A node serving "orders" registers it; here nothing runs.
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 5}); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "spool")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	quiet := slog.New(slog.DiscardHandler) // the drain logs its failed attempts
	c, err := client.New(rdb, &client.Config{Spool: &client.SpoolConfig{Dir: dir, Logger: quiet}})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	mr.Close() // Redis goes away
	for _, state := range []string{"paid", "shipped"} {
		res, err := c.EnqueueReport(ctx, "orders", client.Job{ID: "order-1", Payload: []byte(state)})
		if err != nil {
			panic(err)
		}
		fmt.Println("spooled:", res.Spooled)
	}
	fmt.Println("waiting in the spool:", c.Spooled().Jobs)

	if err := mr.Restart(); err != nil { // Redis is back
		panic(err)
	}
	if err := c.DrainSpool(ctx); err != nil { // the client drains by itself too
		panic(err)
	}
	info, err := store.GetJob(ctx, "orders", "order-1")
	if err != nil {
		panic(err)
	}
	for _, p := range info.Queued.Payloads {
		fmt.Println("queued:", string(p.Data))
	}
	fmt.Println("waiting in the spool:", c.Spooled().Jobs)
	// Output:
	// spooled: 1
	// spooled: 1
	// waiting in the spool: 2
	// queued: paid
	// queued: shipped
	// waiting in the spool: 0
}
