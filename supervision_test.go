package orderly_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// The node actor panics once (a bug): its guardian restarts it, its shard
// actors stop with it and release their leases, and the new instance asks
// the node for its assignment and serves every shard again, under new
// leases. With a lease TTL of a minute, a shard whose lease was not
// released would not be served again within the test.
func TestNodeActorPanicShardsServedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var done atomic.Int32
	n, err := orderly.NewNode(e.store, &orderly.Config{Name: "crashing", Logger: testLogger(t), LeaseTTL: time.Minute,
		Workers: []orderly.Worker{{Queue: "q", Shards: 3, Handler: func(ctx context.Context, b *orderly.Batch) error {
			done.Add(int32(len(b.Jobs)))
			return nil
		}}}})
	require.NoError(t, err)
	crash := orderly.CrashNodeActor(n)
	require.NoError(t, n.Start(e.ctx))
	t.Cleanup(func() { require.NoError(t, n.StopAndCancel(context.Background())) })
	require.Eventually(t, func() bool { return n.Ready(e.ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	before, err := n.Status(e.ctx)
	require.NoError(t, err)

	crash()
	require.Eventually(t, func() bool {
		st, err := n.Status(e.ctx)
		if err != nil || st.Serving != 3 {
			return false
		}
		for i, s := range st.Shards {
			if s.Epoch <= before.Shards[i].Epoch {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every shard served again under a new lease")
	require.NoError(t, n.Ready(e.ctx))
	e.enqueue("q", client.Job{ID: "a"}, client.Job{ID: "b"}, client.Job{ID: "c"})
	require.Eventually(t, func() bool { return done.Load() == 3 }, 10*time.Second, 10*time.Millisecond)
}

// Readiness compares what the node actor serves with what the node should
// serve: a node actor that lost its assignment makes the node not ready,
// also in a cluster (where a share of no shards is a legitimate, ready
// state).
func TestReadyNeedsTheNodeActorToServeTheShare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tr, addr := clustertest.NewNetwork().Transport(t)
	n, err := orderly.NewNode(e.store, &orderly.Config{Name: "alone", Logger: testLogger(t),
		Cluster: orderly.WithTransport(&orderly.ClusterConfig{Bind: addr}, tr),
		Workers: []orderly.Worker{{Queue: "q", Shards: 2, Handler: func(context.Context, *orderly.Batch) error { return nil }}}})
	require.NoError(t, err)
	require.NoError(t, n.Start(e.ctx))
	t.Cleanup(func() { require.NoError(t, n.StopAndCancel(context.Background())) })
	require.Eventually(t, func() bool { return n.Ready(e.ctx) == nil }, 10*time.Second, 10*time.Millisecond)

	orderly.DesyncNodeActor(n)
	require.Eventually(t, func() bool {
		err := n.Ready(e.ctx)
		return errors.Is(err, orderly.ErrNotReady)
	}, 10*time.Second, 10*time.Millisecond, "a node that serves nothing of its share is not ready")
	require.ErrorContains(t, n.Ready(e.ctx), "not assigned to the node actor")
}

// Retry times are read from the node's clock (Config.Clock), like every
// other time of the node: here a clock ten days ahead, shared with the
// store.
func TestRetryTimesFollowTheClock(t *testing.T) {
	t.Parallel()
	clk := offsetClock(240 * time.Hour)
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: clk.Now})
	require.NoError(t, err)
	e := &env{t: t, store: store, ctx: context.Background()}
	failed := make(chan struct{}, 1)
	e.start(orderly.Config{Clock: clk, Workers: []orderly.Worker{{Queue: "q", Shards: 1, RetryIn: orderly.LinearRetry(time.Hour),
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			select {
			case failed <- struct{}{}:
			default:
			}
			return errors.New("boom")
		}}}})
	require.NoError(t, store.Enqueue(e.ctx, "q", []persistence.NewJob{{ID: "a"}}))
	<-failed
	require.Eventually(t, func() bool {
		info, err := store.GetJob(e.ctx, "q", "a")
		return err == nil && info.Queued != nil && info.Queued.RetryCount == 0
	}, 10*time.Second, 10*time.Millisecond)
	info, err := store.GetJob(e.ctx, "q", "a")
	require.NoError(t, err)
	require.WithinDuration(t, clk.Now().Add(time.Hour), info.Queued.PerformAt, time.Minute)
}

// offsetClock is the system clock shifted by a fixed offset.
type offsetClock time.Duration

func (c offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c)) }

func (c offsetClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
