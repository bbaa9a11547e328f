package shard_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// panicky is a store whose Advance panics a number of times (a store bug).
type panicky struct {
	persistence.Store
	panics atomic.Int32
}

func (p *panicky) Advance(ctx context.Context, l persistence.Lease, r persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	if p.panics.Add(-1) >= 0 {
		panic("store bug")
	}
	return p.Store.Advance(ctx, l, r)
}

// TestStorePanicRestartsTheActorWithBackoff: a panicking store call fails
// the shard actor; its supervisor restarts it (with backoff), the restarted
// actor releases nothing twice and serves: the job is processed.
func TestStorePanicRestartsTheActorWithBackoff(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	rs, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, rs.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	require.NoError(t, rs.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a"}}))
	store := &panicky{Store: rs}
	store.panics.Store(2)

	log := slog.New(slog.DiscardHandler)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(logbridge.Protoactor(log)), actor.WithDeadLetterThrottleInterval(100*time.Millisecond))
	defer sys.Shutdown()
	pid, err := sys.Root.SpawnNamed(node.Props(node.Config{Concurrency: 1, HandoffTimeout: time.Second, Logger: log}), "node")
	require.NoError(t, err)
	var done atomic.Int32
	start := time.Now()
	sys.Root.Send(pid, node.Assign{Shards: []shard.Config{{
		Ref: persistence.ShardRef{Queue: "q"}, Store: store, Owner: "n", MaxRetryCount: 25, Logger: log,
		LeaseTTL: 3 * time.Second, IdlePoll: time.Second,
		Process: func(ctx context.Context, b *persistence.Batch) ([]persistence.Failure, error) {
			done.Add(int32(len(b.Jobs)))
			return nil, nil
		},
	}}})
	require.Eventually(t, func() bool { return done.Load() == 1 }, 20*time.Second, 10*time.Millisecond)
	require.Greater(t, time.Since(start), 400*time.Millisecond, "restarts backed off")
	_, err = sys.Root.RequestFuture(pid, node.Drain{Deadline: time.Now().Add(time.Second)}, 10*time.Second).Result()
	require.NoError(t, err)
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
	st, err := rs.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 1, st[0].Processed)
	require.EqualValues(t, 0, st[0].Length)
}
