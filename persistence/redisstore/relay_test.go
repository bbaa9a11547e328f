package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestReplicatedRelayEnqueuesOnce runs the outbox relay in the replicated
// durability mode on a master whose replica does not follow: every relay
// enqueues the emit on the master and then reports
// persistence.ErrNotReplicated, so the entry stays in the outbox and the
// relay runs again. The target handles and acknowledges the job between two
// relays; a relay that ran again must not hand it to the target a second
// time (issue #30: a redelivery storm while Redis failed over).
func TestReplicatedRelayEnqueuesOnce(t *testing.T) {
	ctx := context.Background()
	master := redistest.NewServer(t, redistest.Options{})
	mc := master.Client(t)
	s, err := redisstore.New(mc, &redisstore.Config{Durability: redisstore.DurabilityReplicated, DurabilityReplicas: 1,
		DurabilityTimeout: 50 * time.Millisecond, EnqueueChunk: 2})
	require.NoError(t, err)
	async, err := redisstore.New(mc, nil)
	require.NoError(t, err)
	for _, q := range []string{"src", "dst"} {
		require.NoError(t, async.RegisterQueue(ctx, persistence.QueueSpec{Name: q, Shards: 2}))
	}

	// src's id a emits two jobs into dst (on either shard of dst).
	require.NoError(t, async.Enqueue(ctx, "src", []persistence.NewJob{{ID: "a", Payload: []byte("1")}}))
	srcRef := persistence.ShardRef{Queue: "src", Shard: persistence.ShardOf("a", 2)}
	lease, _, err := async.AcquireShard(ctx, srcRef, "n1", 10*time.Second)
	require.NoError(t, err)
	res, err := async.Advance(ctx, lease, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	// In reverse order of their ids, and more than one enqueue call
	// (EnqueueChunk) per target shard.
	var emits []persistence.Emit
	want := map[string]int{}
	for i := 8; i > 0; i-- {
		id := fmt.Sprintf("x%d", i)
		emits = append(emits, persistence.Emit{From: "a", Queue: "dst", Job: persistence.NewJob{ID: id, Payload: []byte(id)}})
		want[id] = 1
	}
	_, err = async.Advance(ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 3, Emits: emits})
	require.NoError(t, err)

	delivered := map[string]int{}
	consume := func() {
		t.Helper()
		for sh := range 2 {
			ref := persistence.ShardRef{Queue: "dst", Shard: sh}
			l, _, err := async.AcquireShard(ctx, ref, "n2", 10*time.Second)
			require.NoError(t, err)
			res, err := async.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 3})
			require.NoError(t, err)
			if res.Batch != nil {
				for _, j := range res.Batch.Jobs {
					delivered[j.ID]++
				}
				_, err = async.Advance(ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 3})
				require.NoError(t, err)
			}
			require.NoError(t, async.ReleaseShard(ctx, l))
		}
	}

	for range 3 {
		_, _, _, err = s.RelayOutbox(ctx, srcRef, 0)
		require.ErrorIs(t, err, persistence.ErrNotReplicated)
		consume()
	}
	// Once a relay succeeds, the outbox is empty and nothing more comes.
	_, _, more, err := async.RelayOutbox(ctx, srcRef, 0)
	require.NoError(t, err)
	require.False(t, more)
	consume()
	require.Equal(t, want, delivered, "each emit is delivered once")
	n, err := mc.XLen(ctx, fmt.Sprintf("orderly:{src:%d}:2:outbox", srcRef.Shard)).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}
