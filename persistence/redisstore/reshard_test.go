package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Two stores on one Redis: one whose view of the queue is older than the
// reshard the other started (a producer or an operator of another process).
func twoStores(t *testing.T) (stale, fresh *redisstore.Store) {
	t.Helper()
	db := redistest.New(t)
	var err error
	stale, err = redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	fresh, err = redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, stale.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2, Stateful: true}))
	require.NoError(t, fresh.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2, Stateful: true}))
	return stale, fresh
}

// drain drains every shard of the queue's drained generation through s and
// ends the reshard.
func drain(t *testing.T, s *redisstore.Store, sh persistence.QueueShape) {
	t.Helper()
	ctx := context.Background()
	for _, ref := range sh.From.Refs("q") {
		lease, _, err := s.AcquireShard(ctx, ref, "n", time.Minute)
		require.NoError(t, err)
		res, err := s.Advance(ctx, lease, persistence.AdvanceRequest{NextSeq: 1, MaxRetryCount: 25})
		require.NoError(t, err)
		require.True(t, res.Draining || res.Moved)
		for {
			r, err := s.DrainShard(ctx, lease, 100)
			require.NoError(t, err)
			if r.Done {
				break
			}
		}
		require.NoError(t, s.ReleaseShard(ctx, lease))
	}
	done, err := s.FinishReshard(ctx, "q")
	require.NoError(t, err)
	require.True(t, done)
}

// Outside writes to an id whose shard is being drained are refused with
// ErrResharding, even by a store that does not know of the reshard yet:
// the shard itself says so (lua/lib/guard.lua). After the reshard they go
// to the id's new shard.
func TestReshardGuardsOutsideWrites(t *testing.T) {
	t.Parallel()
	stale, fresh := twoStores(t)
	ctx := context.Background()
	_, err := stale.SetState(ctx, "q", "a", []byte("1"), 0, 0)
	require.NoError(t, err)
	require.NoError(t, stale.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a", Payload: []byte("x")}}))

	sh, err := fresh.Reshard(ctx, "q", 3)
	require.NoError(t, err)
	_, err = stale.SetState(ctx, "q", "a", []byte("2"), 1, 0)
	require.ErrorIs(t, err, persistence.ErrResharding)
	_, err = stale.KillJob(ctx, "q", "a")
	require.ErrorIs(t, err, persistence.ErrResharding)
	_, err = fresh.DeleteJob(ctx, "q", "a")
	require.ErrorIs(t, err, persistence.ErrResharding)
	// Enqueues are never refused.
	require.NoError(t, stale.Enqueue(ctx, "q", []persistence.NewJob{{ID: "a", Payload: []byte("y")}}))

	// Once a's old shard is drained, a is served by its new shard, while
	// the reshard still runs.
	home := persistence.ShardRef{Queue: "q", Shard: sh.From.Shard("a")}
	lease, _, err := fresh.AcquireShard(ctx, home, "n", time.Minute)
	require.NoError(t, err)
	_, err = fresh.Advance(ctx, lease, persistence.AdvanceRequest{NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	for {
		r, err := fresh.DrainShard(ctx, lease, 100)
		require.NoError(t, err)
		if r.Done {
			break
		}
	}
	require.NoError(t, fresh.ReleaseShard(ctx, lease))
	v, err := stale.SetState(ctx, "q", "a", []byte("2"), 1, 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, v)
	st, err := fresh.ReshardStatus(ctx, "q")
	require.NoError(t, err)
	require.True(t, st.Shape.Resharding())
	require.Equal(t, 1, st.Drained)

	drain(t, fresh, sh)
	info, err := stale.GetJob(ctx, "q", "a")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 2)
}

// A producer whose view of the queue predates a whole reshard is sent on by
// the drained shard (RESHARDED) and its jobs reach the id's new shard.
func TestReshardStaleProducerIsRerouted(t *testing.T) {
	t.Parallel()
	stale, fresh := twoStores(t)
	ctx := context.Background()
	sh, err := fresh.Reshard(ctx, "q", 5)
	require.NoError(t, err)
	drain(t, fresh, sh)
	var jobs []persistence.NewJob
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte(id)})
	}
	require.NoError(t, stale.Enqueue(ctx, "q", jobs))
	ok, err := stale.EnqueueTick(ctx, "q", "tick", time.UnixMilli(1000), persistence.NewJob{ID: "t", Payload: []byte("t")})
	require.NoError(t, err)
	require.True(t, ok)
	st, err := fresh.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 8, st[0].Length, "every job is in a shard of the queue: none stranded in a drained one")
	require.Equal(t, sh.Current.Base, st[0].FirstShard)
	for _, j := range append(jobs, persistence.NewJob{ID: "t"}) {
		info, err := fresh.GetJob(ctx, "q", j.ID)
		require.NoError(t, err, j.ID)
		require.NotNil(t, info.Queued, j.ID)
	}
}

// On a Cluster with sharded pub/sub, a subscription follows a reshard: the
// shard channels of the new shards are subscribed, so that an enqueue to a
// new shard wakes its owner at once, not at its idle poll.
func TestReshardSubscriptionFollowsNewShards(t *testing.T) {
	db := redistest.NewCluster(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 2}))
	sub, err := s.Subscribe(ctx, "q")
	require.NoError(t, err)
	defer sub.Close()
	sh, err := s.Reshard(ctx, "q", 3)
	require.NoError(t, err)
	drain(t, s, sh)
	target := sh.Current.Shard("x")
	deadline := time.After(20 * time.Second)
	for {
		require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{{ID: "x", Payload: []byte("1")}}))
		wait := time.After(500 * time.Millisecond)
	read:
		for {
			select {
			case ref := <-sub.C():
				if ref.Shard == target {
					return
				}
			case <-wait:
				break read
			case <-deadline:
				t.Fatalf("no notice of shard %d, created by the reshard", target)
			}
		}
	}
}
