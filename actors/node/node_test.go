package node

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/actors/supervisor"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// crash makes the node actor of a test panic once (crashOnce).
type crash struct{}

func crashOnce() actor.ReceiverMiddleware {
	var crashed atomic.Bool
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if _, ok := env.Message.(crash); ok && crashed.CompareAndSwap(false, true) {
				panic("a bug in the node actor")
			}
			next(c, env)
		}
	}
}

func status(t *testing.T, sys *actor.ActorSystem, pid *actor.PID) Status {
	t.Helper()
	res, err := sys.Root.RequestFuture(pid, StatusRequest{}, 5*time.Second).Result()
	require.NoError(t, err)
	return res.(Status)
}

// A node actor that panics is restarted by its guardian; its shard actors
// stop with the old instance and release their leases, and the new instance
// recalls the assignment its previous instance received (the memory the
// props share) and serves the shards again
// without waiting for a change of placement. The lease TTL is a minute: a
// shard whose lease was not released would not be served again within the
// test.
func TestRestartedNodeActorServesItsShardsAgain(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	rs, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, rs.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2}))
	var processed atomic.Int32
	log := slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var assign Assign
	for i := range 2 {
		assign.Shards = append(assign.Shards, shard.Config{
			Ref: persistence.ShardRef{Queue: "q", Shard: i}, Store: rs, Owner: "n", MaxRetryCount: 25,
			LeaseTTL: time.Minute, IdlePoll: 50 * time.Millisecond, Logger: log,
			Process: func(context.Context, *persistence.Batch) ([]persistence.Failure, error) {
				processed.Add(1)
				return nil, nil
			},
		})
	}
	var starts atomic.Int32
	countStarts := func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if _, ok := env.Message.(*actor.Started); ok {
				starts.Add(1)
			}
			next(c, env)
		}
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)), actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	defer sys.Shutdown()
	props := Props(Config{Concurrency: 2, HandoffTimeout: time.Second, Logger: log}).
		Configure(actor.WithGuardian(supervisor.Node()), actor.WithReceiverMiddleware(crashOnce(), countStarts))
	pid, err := sys.Root.SpawnNamed(props, "node")
	require.NoError(t, err)
	sys.Root.Send(pid, Assign{Shards: assign.Shards})
	sys.Root.Send(pid, Controls{Paused: map[string]bool{"other": true}})

	require.Eventually(t, func() bool { return status(t, sys, pid).Serving == 2 }, 10*time.Second, 10*time.Millisecond)
	before := status(t, sys, pid)
	sys.Root.Send(pid, crash{})
	require.Eventually(t, func() bool { return starts.Load() == 2 }, 10*time.Second, 10*time.Millisecond, "restarted")
	require.Eventually(t, func() bool {
		st := status(t, sys, pid)
		return st.Serving == 2 && st.Shards[0].Epoch > before.Shards[0].Epoch && st.Shards[1].Epoch > before.Shards[1].Epoch
	}, 10*time.Second, 10*time.Millisecond, "the shards are served again, under new leases")

	require.NoError(t, rs.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a"}, {ID: "b"}, {ID: "c"}}))
	require.Eventually(t, func() bool { return processed.Load() == 3 }, 10*time.Second, 10*time.Millisecond)

	var once sync.Once
	drained := make(chan struct{})
	sys.Root.Send(pid, Drain{Deadline: time.Now().Add(time.Second), Done: func() { once.Do(func() { close(drained) }) }})
	<-drained
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
}

// A second Drain with an earlier deadline cuts a handler the first one let
// run.
func TestSecondDrainBringsTheDeadlineForward(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	rs, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, rs.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	require.NoError(t, rs.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a"}}))
	log := slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	started := make(chan struct{})
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)), actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	defer sys.Shutdown()
	pid, err := sys.Root.SpawnNamed(Props(Config{Concurrency: 1, HandoffTimeout: time.Second, Logger: log}), "node")
	require.NoError(t, err)
	sys.Root.Send(pid, Assign{Shards: []shard.Config{{
		Ref: persistence.ShardRef{Queue: "q"}, Store: rs, Owner: "n", MaxRetryCount: 25,
		LeaseTTL: time.Second, IdlePoll: time.Second, Logger: log,
		Process: func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}})
	<-started
	first := sys.Root.RequestFuture(pid, Drain{Deadline: time.Now().Add(time.Hour)}, time.Minute)
	second := sys.Root.RequestFuture(pid, Drain{Deadline: time.Now()}, 10*time.Second)
	_, err = second.Result()
	require.NoError(t, err, "the earlier deadline cut the handler")
	_, err = first.Result()
	require.NoError(t, err, "both drains are answered")
	info, err := rs.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.NotNil(t, info.Queued, "the cut batch is back in the queue")
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
}

// tlog writes logs to the test's log, so that a failing test shows them.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// docs/contract.md §9: the node actor holds the queue controls it is told
// (Controls): a paused queue's shards start no call, also after the node
// actor restarted (it recalls the controls with its assignment), and they
// serve again once the queue is resumed.
func TestControlsPauseTheQueueAcrossARestart(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	rs, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, rs.RegisterQueue(ctx, persistence.QueueSpec{Name: "p", Shards: 1}))
	log := slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var processed atomic.Int32
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)), actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	defer sys.Shutdown()
	props := Props(Config{Concurrency: 1, HandoffTimeout: time.Second, Logger: log, Store: rs, LeaseTTL: time.Minute, IdlePoll: 20 * time.Millisecond}).
		Configure(actor.WithGuardian(supervisor.Node()), actor.WithReceiverMiddleware(crashOnce()))
	pid, err := sys.Root.SpawnNamed(props, "node")
	require.NoError(t, err)
	sys.Root.Send(pid, Controls{Paused: map[string]bool{"p": true}})
	sys.Root.Send(pid, Assign{Shards: []shard.Config{{
		Ref: persistence.ShardRef{Queue: "p"}, Store: rs, Owner: "n", MaxRetryCount: 25,
		LeaseTTL: time.Minute, IdlePoll: 20 * time.Millisecond, Logger: log,
		Process: func(context.Context, *persistence.Batch) ([]persistence.Failure, error) {
			processed.Add(1)
			return nil, nil
		},
	}}})
	require.Eventually(t, func() bool { return status(t, sys, pid).Serving == 1 }, 10*time.Second, 10*time.Millisecond)
	before := status(t, sys, pid)
	sys.Root.Send(pid, crash{})
	require.Eventually(t, func() bool {
		st := status(t, sys, pid)
		return st.Serving == 1 && st.Shards[0].Epoch > before.Shards[0].Epoch
	}, 10*time.Second, 10*time.Millisecond, "restarted, serving again")

	require.NoError(t, rs.Enqueue(ctx, "p", []persistence.NewJob{{ID: "a"}}))
	require.Never(t, func() bool { return processed.Load() > 0 }, 300*time.Millisecond, 10*time.Millisecond, "still paused after the restart")
	sys.Root.Send(pid, Controls{Paused: map[string]bool{}})
	require.Eventually(t, func() bool { return processed.Load() == 1 }, 10*time.Second, 10*time.Millisecond, "resumed")

	var once sync.Once
	drained := make(chan struct{})
	sys.Root.Send(pid, Drain{Deadline: time.Now().Add(time.Second), Done: func() { once.Do(func() { close(drained) }) }})
	<-drained
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
}

// SetPause is answered once every shard actor of the queue took the pause
// (so that Node.PauseQueue holds on its own node when it returns), and a
// resume likewise; a node actor that missed its shard actors' answers
// would leave the request to its caller's timeout.
func TestSetPauseIsAnsweredByItsShards(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	rs, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, rs.RegisterQueue(ctx, persistence.QueueSpec{Name: "p", Shards: 3}))
	log := slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)))
	defer sys.Shutdown()
	pid, err := sys.Root.SpawnNamed(Props(Config{Concurrency: 1, HandoffTimeout: time.Second, Logger: log, Store: rs, LeaseTTL: time.Minute, IdlePoll: time.Minute}), "node")
	require.NoError(t, err)
	var shards []shard.Config
	for s := range 3 {
		shards = append(shards, shard.Config{
			Ref: persistence.ShardRef{Queue: "p", Shard: s}, Store: rs, Owner: "n", MaxRetryCount: 25,
			LeaseTTL: time.Minute, IdlePoll: time.Minute, Logger: log,
			Process: func(context.Context, *persistence.Batch) ([]persistence.Failure, error) { return nil, nil },
		})
	}
	sys.Root.Send(pid, Assign{Shards: shards})
	require.Eventually(t, func() bool { return status(t, sys, pid).Serving == 3 }, 10*time.Second, 10*time.Millisecond)
	for _, paused := range []bool{true, false, true} {
		res, err := sys.Root.RequestFuture(pid, SetPause{Queue: "p", Paused: paused}, 10*time.Second).Result()
		require.NoError(t, err, "paused %v: the shard actors' answers reach the node actor", paused)
		require.IsType(t, PauseApplied{}, res)
	}
	var once sync.Once
	drained := make(chan struct{})
	sys.Root.Send(pid, Drain{Deadline: time.Now().Add(time.Second), Done: func() { once.Do(func() { close(drained) }) }})
	<-drained
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
}
