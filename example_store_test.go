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
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// The store answers what the HTTP API, the dashboard and the CLI show: a
// queue's metrics, its queued jobs page by page in several orders, and one
// job by id. No node needs to run.
func Example_stats() {
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
	ctx := context.Background()
	// A node serving the queue registers it with its shard count; here
	// nothing runs, so the example does.
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 4}); err != nil {
		panic(err)
	}
	c, err := client.NewFromStore(store, nil)
	if err != nil {
		panic(err)
	}
	// Jobs without a perform_at are due when they reach Redis; these name
	// theirs, so that the listing below reads the same on every run.
	now := time.Now()
	err = c.Enqueue(ctx, "orders",
		client.Job{ID: "order-3", Payload: []byte("created"), PerformAt: now.Add(-time.Minute)},
		client.Job{ID: "order-1", Payload: []byte("created"), PerformIn: time.Hour},
		client.Job{ID: "order-2", Payload: []byte("created"), Score: client.Score(1), PerformAt: now.Add(-2 * time.Minute)},
		client.Job{ID: "order-2", Payload: []byte("paid"), Score: client.Score(2)})
	if err != nil {
		panic(err)
	}

	st, err := store.Stats(ctx, "orders")
	if err != nil {
		panic(err)
	}
	q := st[0]
	fmt.Printf("%s: %d shards, %d ids queued (%d fresh), %d in flight, %d in the morgue\n",
		q.Name, q.Shards, q.Length, q.Fresh, q.Busy, q.MorgueLength)

	// Earliest perform_at first (ties by id), two per page.
	opts := persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 2}
	for page := 1; ; page++ {
		jobs, err := store.ListJobs(ctx, "orders", opts)
		if err != nil {
			panic(err)
		}
		for _, j := range jobs.Jobs {
			fmt.Printf("page %d: %s, %d payloads\n", page, j.ID, j.PayloadCount)
		}
		if jobs.Next == "" {
			break
		}
		opts.Cursor = jobs.Next
	}

	info, err := store.GetJob(ctx, "orders", "order-2")
	if err != nil {
		panic(err)
	}
	for _, p := range info.Queued.Payloads {
		fmt.Printf("order-2 (shard %d): %s at score %g\n", info.Shard, p.Data, p.Score)
	}
	_, err = store.GetJob(ctx, "orders", "order-9")
	fmt.Println("order-9:", errors.Is(err, persistence.ErrNotFound))
	// Output:
	// orders: 4 shards, 3 ids queued (3 fresh), 0 in flight, 0 in the morgue
	// page 1: order-2, 2 payloads
	// page 1: order-3, 1 payloads
	// page 2: order-1, 1 payloads
	// order-2 (shard 1): created at score 1
	// order-2 (shard 1): paid at score 2
	// order-9: true
}

// Payloads whose retries ran out wait in the morgue until an operator
// requeues or deletes them; the store lists, requeues and deletes them
// (as orderly morgue and the HTTP API do).
func Example_morgue() {
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
			Queue:         "invoices",
			MaxRetryCount: orderly.NoRetries, // to the morgue at the first failure
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				return errors.New("template missing")
			},
			RetriesExhausted: func(ctx context.Context, jobs []orderly.Job) { close(dead) },
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
	if err := c.Enqueue(ctx, "invoices", client.Job{ID: "invoice-7", Payload: []byte(`{"total":99}`)}); err != nil {
		panic(err)
	}
	<-dead
	if err := node.Stop(ctx); err != nil { // nothing processes the requeued job below
		panic(err)
	}

	page, err := store.ListMorgue(ctx, "invoices", persistence.ListOptions{Order: persistence.OrderUpdatedAt, Rev: true})
	if err != nil {
		panic(err)
	}
	for _, e := range page.Entries {
		fmt.Printf("morgue: %s %s (%s)\n", e.ID, e.Payloads[0].Data, e.Error)
	}
	n, err := store.RequeueMorgue(ctx, "invoices", []string{"invoice-7"})
	if err != nil {
		panic(err)
	}
	fmt.Println("requeued:", n)
	info, err := store.GetJob(ctx, "invoices", "invoice-7")
	if err != nil {
		panic(err)
	}
	fmt.Printf("queued again with retry_count %d\n", info.Queued.RetryCount)
	// Output:
	// morgue: invoice-7 {"total":99} (template missing)
	// requeued: 1
	// queued again with retry_count -1
}
