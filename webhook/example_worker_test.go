package webhook_test

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
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// New turns an HTTP endpoint into a worker's handler: the node POSTs each
// batch to it (what the configuration file's handler {type: http} does).
// Here the endpoint is a webhooktest receiver that fails a payment once;
// the node retries it.
func ExampleNew() {
	failedOnce := false
	retried := make(chan struct{})
	rcv := webhooktest.NewReceiver(func(c *webhooktest.Call) webhooktest.Answer {
		j := c.Request.Jobs[0] // calls for one shard never overlap
		fmt.Printf("%s: %s retry_count %d\n", c.Request.Queue, j.ID, j.RetryCount)
		if !failedOnce {
			failedOnce = true
			return webhooktest.Answer{Failed: map[string]string{j.ID: "bank unreachable"}}
		}
		close(retried)
		return webhooktest.Answer{} // 200 with an empty body: acknowledged
	})
	defer rcv.Close()

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
	sender, err := webhook.New(&webhook.Config{URL: rcv.URL, Timeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer sender.Close() // after the node stopped: it ends the idle connections
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue:   "payments",
			Shards:  1,
			RetryIn: orderly.LinearRetry(10 * time.Millisecond),
			Handler: sender.Handle,
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
	if err := c.Enqueue(ctx, "payments", client.Job{ID: "pay-1", Payload: []byte(`{"cents":500}`)}); err != nil {
		panic(err)
	}
	<-retried
	if err := node.Stop(ctx); err != nil { // waits for the last delivery's answer
		panic(err)
	}
	calls := rcv.Calls()
	fmt.Println("deliveries:", len(calls), "acknowledged the second:", calls[1].Acked("pay-1"))
	// Output:
	// payments: pay-1 retry_count -1
	// payments: pay-1 retry_count 0
	// deliveries: 2 acknowledged the second: true
}
