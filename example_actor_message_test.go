package orderly_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// A program that embeds a node can enqueue by actor message: AskEnqueue
// hands messages.Enqueue to the node's well-known enqueue actor, the one
// other processes reach through protoactor remote (Config.ActorAddr and
// messages.EnqueueActorName; examples/remote-enqueue is such a process).
func ExampleNode_AskEnqueue() {
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
	handled := make(chan string, 1)
	node, err := orderly.NewNode(store, &orderly.Config{
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue: "orders",
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				handled <- string(b.Jobs[0].Payloads[0].Data)
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

	res, err := node.AskEnqueue(ctx, &messages.Enqueue{
		Queue: "orders",
		Jobs:  []*messages.Job{{Id: "order-7", Payload: []byte(`{"state":"shipped"}`)}},
	})
	if err != nil {
		panic(err) // no answer: the node is not running, or ctx ended
	}
	fmt.Println("enqueued:", res.GetEnqueued())
	fmt.Println("handled:", <-handled)

	// A bad request is answered with an error naming the field; nothing is
	// written.
	res, err = node.AskEnqueue(ctx, &messages.Enqueue{Queue: "orders", Jobs: []*messages.Job{{Id: ""}}})
	if err != nil {
		panic(err)
	}
	e := res.GetError()
	fmt.Printf("%s: %s\n", e.GetCode(), e.GetMessage()) // and e.GetField()
	// Output:
	// enqueued: 1
	// handled: {"state":"shipped"}
	// CODE_INVALID: jobs[0].id: must not be empty
}

// The enqueue actor also answers StatsRequest: the metrics of the node's
// queues, as Redis holds them.
func ExampleNode_AskStats() {
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
	node, err := orderly.NewNode(store, &orderly.Config{
		Name:   "n1",
		Logger: slog.New(slog.DiscardHandler),
		Workers: []orderly.Worker{{
			Queue:  "orders",
			Shards: 8,
			Handler: func(ctx context.Context, b *orderly.Batch) error {
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

	stats, err := node.AskStats(ctx, &messages.StatsRequest{Queues: []string{"orders"}})
	if err != nil {
		panic(err)
	}
	for _, q := range stats.GetQueues() {
		fmt.Printf("queue %s: %d shards, %d queued, %d in the morgue\n", q.GetName(), q.GetShards(), q.GetLength(), q.GetMorgueLength())
	}
	// Output:
	// queue orders: 8 shards, 0 queued, 0 in the morgue
}
