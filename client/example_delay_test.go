package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// PerformIn and PerformAt delay a job: it is not handed to a handler before
// then. A job that merges into a queued job of the same id keeps the queued
// job's time.
func ExampleJob_delayed() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	store, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "reminders", Shards: 5}); err != nil {
		panic(err)
	}

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, err := client.New(rdb, &client.Config{
		Now: func() time.Time { return now }, // the clock PerformIn counts from [time.Now]
	})
	if err != nil {
		panic(err)
	}
	err = c.Enqueue(ctx, "reminders",
		client.Job{ID: "cart-17", Payload: []byte("abandoned"), PerformIn: 30 * time.Minute},
		client.Job{ID: "invoice-4", Payload: []byte("due"), PerformAt: now.Add(24 * time.Hour)})
	if err != nil {
		panic(err)
	}
	// A second payload for cart-17 waits with the first.
	err = c.Enqueue(ctx, "reminders", client.Job{ID: "cart-17", Payload: []byte("still abandoned"), PerformIn: time.Minute})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"cart-17", "invoice-4"} {
		info, err := store.GetJob(ctx, "reminders", id)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: due %s, %d payloads\n", id, info.Queued.PerformAt.UTC().Format(time.RFC3339), len(info.Queued.Payloads))
	}

	err = c.Enqueue(ctx, "reminders", client.Job{ID: "x", PerformIn: time.Minute, PerformAt: now})
	fmt.Println(err)
	// Output:
	// cart-17: due 2026-03-01T12:30:00Z, 2 payloads
	// invoice-4: due 2026-03-02T12:00:00Z, 1 payloads
	// jobs[0].perform_in: give perform_at or perform_in, not both
}
