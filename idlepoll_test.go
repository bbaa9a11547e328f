package orderly_test

import (
	"context"
	"fmt"
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

// deafStore is a store whose enqueue notices never arrive, as if every one
// were lost while pub/sub reconnects: only the idle poll finds new jobs.
type deafStore struct{ persistence.Store }

func (deafStore) Subscribe(context.Context, ...string) (persistence.Subscription, error) {
	return &deafSub{c: make(chan persistence.ShardRef)}, nil
}

type deafSub struct {
	once sync.Once
	c    chan persistence.ShardRef
}

func (s *deafSub) C() <-chan persistence.ShardRef { return s.c }
func (s *deafSub) Close() error {
	s.once.Do(func() { close(s.c) })
	return nil
}

// An idle node polls all its idle shards together: one round trip per idle
// poll however many shards it serves (not one Advance per shard), and a job
// nobody announced is still found by the poll and handled.
func TestIdleNodePollsItsShardsTogether(t *testing.T) {
	t.Parallel()
	const queues, shards = 20, 8
	const poll = 250 * time.Millisecond
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	handled := make(chan string, 1)
	var ws []orderly.Worker
	for i := range queues {
		ws = append(ws, orderly.Worker{Queue: fmt.Sprint("q", i), Shards: shards, Handler: func(_ context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				handled <- j.ID
			}
			return nil
		}})
	}
	n, err := orderly.NewNode(deafStore{store}, &orderly.Config{
		Name: "idle", Workers: ws, LeaseTTL: 3 * time.Second, IdlePoll: poll, Logger: testLogger(t),
	})
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	}()
	require.Eventually(t, func() bool {
		st, err := n.Status(context.Background())
		return err == nil && st.Serving == queues*shards
	}, 30*time.Second, 20*time.Millisecond, "serving every shard")

	time.Sleep(time.Second) // the first fetches and morgue trims are done
	before, from := store.Counters(), time.Now()
	time.Sleep(2 * time.Second)
	got, elapsed := store.Counters().Sub(before), time.Since(from)
	polls, renewals, controls := int64(elapsed/poll)+1, int64(elapsed/time.Second)+1, int64(elapsed/time.Second)+1
	t.Logf("%d shards idle for %s: %d round trips, %d commands", queues*shards, elapsed, got.RoundTrips, got.Commands)
	// One Advance per shard and poll would be 160 round trips per poll.
	require.LessOrEqual(t, got.RoundTrips, 2*(polls+renewals+controls), "one round trip per idle poll, not one per shard")

	other, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.NewFromStore(other, nil)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(context.Background(), "q3", client.Job{ID: "unannounced"}))
	select {
	case id := <-handled:
		require.Equal(t, "unannounced", id)
	case <-time.After(10 * time.Second):
		t.Fatal("the poll did not find the job")
	}
}
