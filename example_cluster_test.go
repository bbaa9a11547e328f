package orderly_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Nodes that share a Redis and gossip form a cluster: they split each
// queue's shards between them (each shard is served under a lease in Redis)
// and take a leaving or dead node's shards over. Here two nodes run in one
// process; in production each is its own process (orderly --bind, --join).
func ExampleClusterConfig() {
	mr, err := miniredis.Run() // an in-memory Redis for the example
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	ctx := context.Background()

	var stops []func() // the nodes' stops, each with its Redis client's Close
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	start := func(name string, join []string) *orderly.Node {
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()}) // each node has its own client
		store, err := redisstore.New(rdb, nil)
		if err != nil {
			panic(err)
		}
		node, err := orderly.NewNode(store, &orderly.Config{
			Name:   name,
			Logger: slog.New(slog.DiscardHandler),
			Cluster: &orderly.ClusterConfig{
				Bind: "127.0.0.1:0", // gossip; port 0 picks a free one [127.0.0.1:7946]
				Join: join,          // seeds: any members already running
			},
			Workers: []orderly.Worker{{
				Queue:   "orders",
				Shards:  4,
				Handler: func(ctx context.Context, b *orderly.Batch) error { return nil },
			}},
		})
		if err != nil {
			panic(err)
		}
		if err := node.Start(ctx); err != nil {
			panic(err)
		}
		stops = append(stops, func() { node.Stop(ctx); rdb.Close() })
		return node
	}
	n1 := start("n1", nil)
	n2 := start("n2", []string{n1.Members()[0].Addr}) // n1's gossip address

	// Wait until each node sees the other and serves its share.
	settled := func(n *orderly.Node) bool {
		st, err := n.Status(ctx)
		return err == nil && len(n.Members()) == 2 && n.Ready(ctx) == nil && st.Assigned == 2
	}
	for !settled(n1) || !settled(n2) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, m := range n1.Members() {
		fmt.Println("member:", m.Name, m.State, m.Queues)
	}
	for _, n := range []*orderly.Node{n1, n2} {
		st, err := n.Status(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s serves %d of the 4 shards\n", n.Name(), st.Serving)
	}
	// Output:
	// member: n1 alive [orders]
	// member: n2 alive [orders]
	// n1 serves 2 of the 4 shards
	// n2 serves 2 of the 4 shards
}
