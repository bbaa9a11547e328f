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

// A program that embeds a node can enqueue by actor message: Ask sends
// messages.Enqueue to the node's well-known enqueue actor, the one other
// processes reach through protoactor remote (Config.ActorAddr and
// EnqueueActorName; examples/remote-enqueue is such a process).
func ExampleNode_Ask() {
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

	answer, err := node.Ask(ctx, &messages.Enqueue{
		Queue: "orders",
		Jobs:  []*messages.Job{{Id: "order-7", Payload: []byte(`{"state":"shipped"}`)}},
	})
	if err != nil {
		panic(err) // no answer: the node is not running, or ctx ended
	}
	res := answer.(*messages.EnqueueResult)
	fmt.Println("enqueued:", res.GetEnqueued())
	fmt.Println("handled:", <-handled)

	// A bad request is answered with an error naming the field; nothing is
	// written.
	answer, err = node.Ask(ctx, &messages.Enqueue{Queue: "orders", Jobs: []*messages.Job{{Id: ""}}})
	if err != nil {
		panic(err)
	}
	e := answer.(*messages.EnqueueResult).GetError()
	fmt.Printf("%s: %s\n", e.GetCode(), e.GetMessage()) // and e.GetField()
	// Output:
	// enqueued: 1
	// handled: {"state":"shipped"}
	// CODE_INVALID: jobs[0].id: must not be empty
}

// The enqueue actor also answers StatsRequest (the metrics of the node's
// queues, as Redis holds them) and MembersRequest (the cluster as the node
// sees it).
func ExampleNode_Ask_stats() {
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

	answer, err := node.Ask(ctx, &messages.StatsRequest{Queues: []string{"orders"}})
	if err != nil {
		panic(err)
	}
	for _, q := range answer.(*messages.StatsResponse).GetQueues() {
		fmt.Printf("queue %s: %d shards, %d queued, %d in the morgue\n", q.GetName(), q.GetShards(), q.GetLength(), q.GetMorgueLength())
	}
	answer, err = node.Ask(ctx, &messages.MembersRequest{})
	if err != nil {
		panic(err)
	}
	members := answer.(*messages.MembersResponse)
	for _, m := range members.GetMembers() {
		fmt.Printf("member %s: %s, queues %v (answered by %s)\n", m.GetName(), m.GetState(), m.GetQueues(), members.GetSelf())
	}
	// Output:
	// queue orders: 8 shards, 0 queued, 0 in the morgue
	// member n1: alive, queues [orders] (answered by n1)
}
