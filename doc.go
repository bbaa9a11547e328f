// Package orderly runs ordered background jobs: every job has an id, jobs of
// one id are never processed concurrently and reach their handler in score
// order, payloads of one id merge while they wait, failures retry with
// backoff, exhausted payloads go to a morgue, and in-flight work survives a
// crash. Redis holds the queues; nodes share each queue's shards.
//
// # A worker
//
// A program defines Workers (a queue and its handler) and starts a Node on
// a persistence.Store; producers enqueue with the client package. This is
// the body of the README's program (its main calls it, and apply handles
// one order's payloads):
//
//	func run() error {
//		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
//		defer stop()
//
//		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//		defer rdb.Close()
//		store, err := redisstore.New(rdb, nil)
//		if err != nil {
//			return err
//		}
//		node, err := orderly.NewNode(store, &orderly.Config{
//			Workers: []orderly.Worker{{
//				Queue:     "orders",
//				Shards:    8,  // at creation; `orderly queues reshard` changes it online
//				BatchSize: 10, // up to 10 distinct ids per call
//				Handler: func(ctx context.Context, b *orderly.Batch) error {
//					failed := map[string]error{}
//					for _, job := range b.Jobs { // each id once, its payloads in score order
//						if err := apply(ctx, job.ID, job.Payloads); err != nil {
//							failed[job.ID] = err // retried with backoff; the others are acknowledged
//						}
//					}
//					return orderly.FailIDs(failed) // nil when nothing failed
//				},
//			}},
//		})
//		if err != nil {
//			return err
//		}
//		if err := node.Start(ctx); err != nil {
//			return err
//		}
//
//		c, err := client.New(rdb, nil) // producers need only the client
//		if err != nil {
//			return err
//		}
//		err = c.Enqueue(ctx, "orders", client.Job{ID: "order-42", Payload: []byte(`{"state":"paid"}`)})
//		if err != nil {
//			return err
//		}
//
//		<-ctx.Done() // Ctrl-C or SIGTERM
//		stop()       // a second signal kills the process
//		// Graceful: running batches finish (within ShutdownTimeout), leases are released.
//		return node.Stop(context.Background())
//	}
//
// Every knob of Config and Worker has a documented default, used when the
// field is zero; NewNode validates the configuration and does no I/O.
//
// # Jobs
//
// A job is an id with payloads. An id is non-empty valid UTF-8 of at most
// persistence.MaxIDBytes (512) bytes; a payload is opaque bytes, at most
// 1 MiB as stored by default, with a score (unix seconds at enqueue unless
// given) that orders the id's payloads. Jobs of one id merge while they
// wait: their payload sets are united, and for an equal payload the lower
// score wins. A job is due at its perform_at (client.Job's PerformAt or
// PerformIn; now by default); a shard hands out its due ids earliest
// perform_at first, each id with all its queued payloads.
//
// The id decides the shard (CRC-32 of the id modulo the queue's Shards), and
// one actor per shard, holding the shard's lease in Redis, runs one handler
// call at a time: that is what keeps one id's calls apart and in order.
// Ids of different shards run concurrently, up to Config.Concurrency calls
// per node.
//
// # Handlers and failures
//
// A handler returns nil to acknowledge every id of its batch, FailIDs (a
// *PartialFailure) to fail some ids and acknowledge the others, or any
// other error to fail the whole batch; a panic fails the whole batch too. A
// failed id is retried after Worker.RetryIn (LowkiqRetry by default;
// LinearRetry, ExponentialRetry, or any RetryPolicy), with its retry count
// raised and its error kept. After Worker.MaxRetryCount retries (0 means
// DefaultMaxRetryCount, 25; NoRetries means none) the lowest-scored payload
// of the id goes to the morgue, where it waits for an operator, and
// Worker.RetriesExhausted receives it; the id's other payloads are queued
// again as a fresh job. Worker.Timeout bounds one call. A handler may
// also choose an id's fate, for the whole call or per id in FailIDs:
// Snooze(d) brings it back after d without counting a failure, Dead(reason)
// sends it to the morgue now, Discard(reason) drops it (counted); the
// RetryPolicy, which sees each failure's error, is not asked for them.
//
// A handler's context is cancelled when its timeout passes, when a stop's
// deadline comes (or StopAndCancel), and at once when the node loses the
// shard's lease; a handler must return then. A batch cut by a stop or a
// lost lease goes back to the queue unchanged and is delivered again:
// delivery is at least once, so handlers should be idempotent.
// Batch.Delivery names the attempt ("<queue>/<shard>/<epoch>/<seq>"); its
// epoch grows with every new lease of the shard.
//
// Config.Middleware wraps every handler (server middleware), the first the
// outermost; client.Config.Middleware wraps every enqueue.
//
// # Producers
//
// Jobs come in through the client package (a Client writes to Redis and
// needs no node), the HTTP API of the orderly binary (package web), or an
// actor message: Node.AskEnqueue hands *messages.Enqueue to the node's
// enqueue actor, which other processes reach through protoactor remote at
// Config.ActorAddr under messages.EnqueueActorName (see
// examples/remote-enqueue).
// Only orderly's messages to that actor pass the remote: system messages
// and messages to other actors are dropped, Config.ActorToken makes clients
// present a token (ActorCredentials), and the actor is started again if it
// ever stops.
// Validation is all or nothing: one bad job rejects the whole call, with an
// error naming the field (a *persistence.FieldError). A queue must have been
// registered, by a node that serves it or with persistence.Store's
// RegisterQueue.
//
// A queue can also be handled by an HTTP endpoint written in any language:
// webhook.New returns a Sender whose Handle method POSTs each batch to a URL.
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
// included. The store answers what operators look at: a queue's metrics,
// its jobs, its in-flight batches and its morgue (persistence.Store; the
// HTTP API, the dashboard and the orderly command line read the same).
// Config.Clock replaces the system clock, for tests.
//
// # Examples and the contract
//
// The examples of this package and of client, webhook and metrics are
// programs to copy: each runs an in-memory Redis (miniredis) and is checked
// by its output. What Orderly guarantees, rule by rule, is in the
// repository's docs/contract.md, which also lists what this release does
// not build yet; code and tests cite its rules (docs/contract.md §3.5).
package orderly
