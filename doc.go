// Package orderly runs ordered background jobs: every job has an id, jobs of
// one id are never processed concurrently and reach their handler in score
// order, payloads of one id merge while they wait, failures retry with
// backoff, exhausted payloads go to a morgue, and in-flight work survives a
// crash. Redis holds the queues; nodes share each queue's shards.
//
// # A worker
//
// A program defines Workers (a queue and its handler) and starts a Node on
// a persistence.Store; producers enqueue with the client package, over
// HTTP, or by actor message (Node.Ask, or EnqueueActorName through
// protoactor remote):
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	store, err := redisstore.New(rdb, nil)
//	if err != nil {
//		return err
//	}
//	node, err := orderly.NewNode(store, &orderly.Config{
//		Workers: []orderly.Worker{{
//			Queue:     "orders",
//			Shards:    8,  // fixed for the life of the queue
//			BatchSize: 10, // up to 10 distinct ids per call
//			Handler: func(ctx context.Context, b *orderly.Batch) error {
//				failed := map[string]error{}
//				for _, job := range b.Jobs { // each id once, its payloads in score order
//					if err := apply(ctx, job.ID, job.Payloads); err != nil {
//						failed[job.ID] = err // retried with backoff; the others are acknowledged
//					}
//				}
//				return orderly.FailIDs(failed)
//			},
//		}},
//	})
//	if err != nil {
//		return err
//	}
//	if err := node.Start(ctx); err != nil {
//		return err
//	}
//	defer node.Stop(context.Background()) // finishes running batches, releases the shards
//
// A handler error fails the whole batch, FailIDs fails some of its ids, a
// panic fails the batch; Worker.RetryIn spaces the retries and
// Worker.MaxRetryCount bounds them before the morgue.
//
// # Stopping
//
// Stop is graceful: shards stop fetching, running batches may finish until
// ShutdownTimeout (or the context's earlier deadline), leases are released
// so that other nodes take over at once. StopAndCancel, alone or while a
// Stop runs (a second SIGTERM), cancels running batches at once; a cancelled
// batch goes back to the queue unchanged. Both return once the node has
// stopped. Quiet and Resume pause and resume processing without stopping.
//
// # Clusters
//
// With Config.Cluster, nodes that share a Redis find each other by gossip
// (hashicorp/memberlist) and split each queue's shards between them; a
// shard's lease in Redis, with a fencing token, decides who may process it.
// Members lists the cluster as a node sees it; Ready says whether the node
// serves its share.
//
// # Observing
//
// Status and Ready describe the node's shards; Config.Observer receives
// every batch and lease loss (the metrics package implements it for
// Prometheus); Config.Logger receives the node's logs, its dependencies'
// included. Config.Clock replaces the system clock, for tests.
package orderly
