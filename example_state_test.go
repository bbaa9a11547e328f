package orderly_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A stateful queue keeps a counter per id: each call adds the number of
// payloads it got, and the new count is committed with the acknowledgement.
// An outside compare-and-set (client.SetState) changes it between calls.
func ExampleJob_SetState() {
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

	calls := make(chan string)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "clicks", Shards: 1, State: true,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				for _, j := range b.Jobs {
					n, _ := strconv.Atoi(string(j.State())) // nil: no state yet
					j.SetState([]byte(strconv.Itoa(n + len(j.Payloads))))
					calls <- fmt.Sprintf("%s: had %d (version %d), got %d", j.ID, n, j.StateVersion(), len(j.Payloads))
				}
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

	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "clicks", client.Job{ID: "ad-7", Payload: []byte("a")}, client.Job{ID: "ad-7", Payload: []byte("b")}); err != nil {
		panic(err)
	}
	fmt.Println(<-calls)
	for { // the commit follows the call
		if st, _ := c.GetState(ctx, "clicks", "ad-7"); st.Version == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := c.SetState(ctx, "clicks", "ad-7", []byte("100"), 1); err != nil {
		panic(err)
	}
	if err := c.Enqueue(ctx, "clicks", client.Job{ID: "ad-7", Payload: []byte("c")}); err != nil {
		panic(err)
	}
	fmt.Println(<-calls)
	// Output:
	// ad-7: had 0 (version 0), got 2
	// ad-7: had 100 (version 2), got 1
}
