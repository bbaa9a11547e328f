package orderly_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// refLosses records which shards lost their lease.
type refLosses struct {
	mu   sync.Mutex // guards lost
	lost []persistence.ShardRef
}

func (o *refLosses) BatchDone(persistence.ShardRef, int, int, time.Duration, error) {}
func (o *refLosses) LeaseLost(ref persistence.ShardRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lost = append(o.lost, ref)
}

func (o *refLosses) refs() []persistence.ShardRef {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lost)
}

// An idle node renews the leases of all its shards together: one round trip
// and one script call per renewal interval (LeaseTTL/3) however many shards
// it holds, each lease still fenced on its own. A lease taken away from one shard is lost by that shard alone, whose
// running handler is cancelled at once; the others keep their epochs.
func TestIdleNodeRenewsItsLeasesTogether(t *testing.T) {
	t.Parallel()
	const queues, shards = 20, 8
	const ttl = 1500 * time.Millisecond
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	obs := &refLosses{}
	cancelled := make(chan error, 1)
	started := make(chan int, 1)
	var ws []orderly.Worker
	for i := range queues {
		ws = append(ws, orderly.Worker{Queue: fmt.Sprint("q", i), Shards: shards, Handler: func(ctx context.Context, b *orderly.Batch) error {
			select {
			case started <- b.Shard:
			default:
			}
			<-ctx.Done()
			select {
			case cancelled <- context.Cause(ctx):
			default:
			}
			return ctx.Err()
		}})
	}
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: "many-shards", Workers: ws, LeaseTTL: ttl, IdlePoll: time.Hour, Observer: obs,
		Concurrency: 1, Logger: testLogger(t),
	})
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	}()
	epochs := func() map[persistence.ShardRef]int64 {
		st, err := n.Status(context.Background())
		require.NoError(t, err)
		out := map[persistence.ShardRef]int64{}
		for _, s := range st.Shards {
			if s.Serving {
				out[s.Ref] = s.Epoch
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(epochs()) == queues*shards }, 30*time.Second, 20*time.Millisecond, "serving every shard")
	first := epochs()

	// Idle: count what the node sends over a few renewal intervals.
	time.Sleep(ttl) // the first morgue trims and fetches are done
	before, from := store.Counters(), time.Now()
	time.Sleep(4 * ttl)
	got, elapsed := store.Counters().Sub(before), time.Since(from)
	intervals := int64(elapsed / (ttl / 3))
	t.Logf("%d shards idle for %s (%d renewal intervals): %d round trips, %d commands", queues*shards, elapsed, intervals, got.RoundTrips, got.Commands)
	// Renewals: one round trip per interval (one per shard per interval
	// would be 160 times that), one script call for all the leases; the
	// rest is the node's once-a-second read of its queues' controls (one
	// command per queue). No lease was lost although each lives 1.5 s
	// unrenewed: every one was renewed in each batch.
	require.LessOrEqual(t, got.RoundTrips, 2*intervals, "one round trip per renewal interval, not one per shard")
	require.Less(t, got.Commands, intervals*queues*shards/4, "one script call per renewal interval, not one per shard")
	require.Empty(t, obs.refs(), "no lease lost")
	require.Equal(t, first, epochs(), "no shard taken again")

	// A job runs on one shard of q3; another owner takes that shard's lease
	// (as after a partition): the batched renewal is refused for it alone.
	c, err := client.NewFromStore(store, nil)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(context.Background(), "q3", client.Job{ID: "long"}))
	var shard int
	select {
	case shard = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not start")
	}
	stolen := persistence.ShardRef{Queue: "q3", Shard: shard}
	require.NoError(t, db.Client.Set(context.Background(), fmt.Sprintf("%s:{q3:%d}:2:lease", db.Prefix, shard), "someone-else", ttl).Err())
	select {
	case cause := <-cancelled:
		require.EqualError(t, cause, "shard lease lost")
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	require.Eventually(t, func() bool { return len(obs.refs()) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []persistence.ShardRef{stolen}, obs.refs(), "only the shard whose lease was taken lost it")
	now := epochs()
	for ref, e := range first {
		if ref != stolen {
			require.Equal(t, e, now[ref], "%s kept its lease", ref)
		}
	}
}
