package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A program that embeds a node counts its events with Metrics: the store
// wrapped by Store counts enqueues and settlements, and Metrics as the
// node's Observer times each handler call. Handler serves them (mount it
// at /metrics); Watch adds the gauges read from Redis at scrape time.
func ExampleNew() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	rs, err := redisstore.New(rdb, nil)
	if err != nil {
		panic(err)
	}

	m := metrics.New()
	done := make(chan struct{})
	node, err := orderly.NewNode(m.Store(rs), &orderly.Config{
		Logger:   slog.New(slog.DiscardHandler),
		Observer: m,
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
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
	c, err := client.New(rdb, nil) // a producer of its own: not counted here
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "orders", client.Job{ID: "order-1"}); err != nil {
		panic(err)
	}
	<-done
	if err := node.Stop(ctx); err != nil { // the batch is settled once Stop returns
		panic(err)
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	lines := bufio.NewScanner(rec.Body)
	for lines.Scan() {
		l := lines.Text()
		if strings.HasPrefix(l, "orderly_jobs_processed_total") || strings.HasPrefix(l, "orderly_batch_duration_seconds_count") {
			fmt.Println(l)
		}
	}
	// Output:
	// orderly_batch_duration_seconds_count{outcome="ok",queue="orders"} 1
	// orderly_jobs_processed_total{queue="orders"} 1
}
