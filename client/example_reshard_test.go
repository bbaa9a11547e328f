package client_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// An operator program moves a queue to more shards while it serves: the
// nodes serving it drain the old shards by themselves, and ReshardStatus
// follows them (here no node runs, so every id is still to move).
func ExampleClient_Reshard() {
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
	if err := store.RegisterQueue(ctx, persistence.QueueSpec{Name: "orders", Shards: 2}); err != nil {
		panic(err)
	}
	c, err := client.New(rdb, nil)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"order-1", "order-2", "order-3"} {
		if err := c.Enqueue(ctx, "orders", client.Job{ID: id, Payload: []byte(`{}`)}); err != nil {
			panic(err)
		}
	}
	st, err := c.Reshard(ctx, "orders", 8)
	if err != nil {
		panic(err)
	}
	fmt.Printf("from %d to %d shards (%d..%d): %d moved, %d left\n", st.Shape.From.Count, st.Shape.Current.Count,
		st.Shape.Current.Base, st.Shape.Current.Base+st.Shape.Current.Count-1, st.Moved, st.Left)
	st, err = c.ReshardStatus(ctx, "orders")
	if err != nil {
		panic(err)
	}
	fmt.Println("resharding:", st.Shape.Resharding())
	// Output:
	// from 2 to 8 shards (2..9): 0 moved, 3 left
	// resharding: true
}
