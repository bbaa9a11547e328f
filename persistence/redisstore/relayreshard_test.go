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

// drainShard drains shard of queue as its owner does (DrainShard steps).
func drainShard(t *testing.T, s *redisstore.Store, queue string, shard int) {
	t.Helper()
	ctx := context.Background()
	l, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: queue, Shard: shard}, "owner", 10*time.Second)
	require.NoError(t, err)
	res, err := s.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, MaxRetryCount: 3})
	require.NoError(t, err)
	require.True(t, res.Draining)
	for range 100 {
		r, err := s.DrainShard(ctx, l, 100)
		require.NoError(t, err)
		if r.Done {
			require.NoError(t, s.ReleaseShard(ctx, l))
			return
		}
	}
	t.Fatal("the shard was not drained")
}

// reshardAll reshards queue to n shards and drains every old shard as
// their owners would, then ends the reshard.
func reshardAll(t *testing.T, s *redisstore.Store, queue string, n int) persistence.QueueShape {
	t.Helper()
	ctx := context.Background()
	sh, err := s.Reshard(ctx, queue, n)
	require.NoError(t, err)
	for _, ref := range sh.From.Refs(queue) {
		drainShard(t, s, queue, ref.Shard)
	}
	done, err := s.FinishReshard(ctx, queue)
	require.NoError(t, err)
	require.True(t, done)
	return sh
}

// A relay whose emits go to two shards of a resharded queue, one of the
// drained generation that answers RESHARDED (drained since the relaying
// store last looked) and one of the new generation, must write both: the
// emit sent back goes to its new shard, whose relay mark the other emit of
// the same relay has just moved.
func TestRelayAcrossAReshardLosesNoEmit(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.NewServer(t, redistest.Options{}).Client(t)
	relayer, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	owner, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, relayer.RegisterQueue(ctx, persistence.QueueSpec{Name: "src", Shards: 1}))
	require.NoError(t, relayer.RegisterQueue(ctx, persistence.QueueSpec{Name: "dst", Shards: 2}))
	// a and b: on shards 0 and 1 of dst, on one shard after the reshard to 3.
	var a, b string
	for i := 0; a == "" || b == ""; i++ {
		id := fmt.Sprintf("id%d", i)
		if persistence.ShardOf(id, 3) != 0 {
			continue
		}
		if persistence.ShardOf(id, 2) == 0 && a == "" {
			a = id
		} else if persistence.ShardOf(id, 2) == 1 && b == "" {
			b = id
		}
	}
	_, err = owner.Reshard(ctx, "dst", 3)
	require.NoError(t, err)
	_, err = relayer.Shape(ctx, "dst")
	require.NoError(t, err)
	// b's old shard is drained, and the relayer learns it; a's is drained
	// behind its back.
	drainShard(t, owner, "dst", 1)
	require.NoError(t, relayer.Enqueue(ctx, "dst", []persistence.NewJob{{ID: b, Payload: []byte("0")}}))
	drainShard(t, owner, "dst", 0)

	require.NoError(t, relayer.Enqueue(ctx, "src", []persistence.NewJob{{ID: "s", Payload: []byte("1")}}))
	src := persistence.ShardRef{Queue: "src", Shard: 0}
	l, _, err := relayer.AcquireShard(ctx, src, "n1", 10*time.Second)
	require.NoError(t, err)
	res, err := relayer.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 1, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	_, err = relayer.Advance(ctx, l, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 3, Emits: []persistence.Emit{
		{From: "s", Queue: "dst", Job: persistence.NewJob{ID: a, Payload: []byte("emit-a")}},
		{From: "s", Queue: "dst", Job: persistence.NewJob{ID: b, Payload: []byte("emit-b")}},
	}})
	require.NoError(t, err)
	_, _, _, err = relayer.RelayOutbox(ctx, src, 0)
	require.NoError(t, err)

	for _, id := range []string{a, b} {
		info, err := relayer.GetJob(ctx, "dst", id)
		require.NoError(t, err, "the emit to %s was written", id)
		var got []string
		if info.Queued != nil {
			for _, p := range info.Queued.Payloads {
				got = append(got, string(p.Data))
			}
		}
		require.Contains(t, got, "emit-"+map[string]string{a: "a", b: "b"}[id], "the emit to %s was written", id)
	}
}

// A relay that wrote an emit into a shard being drained, and runs again
// (its outbox trim failed) once that shard is drained, does not hand the
// emit to the id's new shard a second time: the drained shard's relay mark
// says it took it, and it moved with the shard's ids.
func TestRelayAgainAfterAReshardHandsNoEmitTwice(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.NewServer(t, redistest.Options{}).Client(t)
	relayer, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	owner, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, relayer.RegisterQueue(ctx, persistence.QueueSpec{Name: "dst", Shards: 2}))
	sh, err := owner.Reshard(ctx, "dst", 3)
	require.NoError(t, err)
	_, err = relayer.Shape(ctx, "dst")
	require.NoError(t, err)
	emit := []persistence.NewJob{{ID: "a", Payload: []byte("emit-a")}}
	require.NoError(t, relayer.EnqueueRelay(ctx, "dst", "src/0", []string{"5-0"}, emit))
	drainShard(t, owner, "dst", sh.From.Shard("a"))

	// The emit moved to a's new shard; it is handled there.
	l, _, err := owner.AcquireShard(ctx, persistence.ShardRef{Queue: "dst", Shard: sh.Current.Shard("a")}, "n", 10*time.Second)
	require.NoError(t, err)
	res, err := owner.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	require.Equal(t, "a", res.Batch.Jobs[0].ID)
	_, err = owner.Advance(ctx, l, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: 2, MaxRetryCount: 3})
	require.NoError(t, err)

	// The relayer learns that a's old shard is drained (a plain enqueue
	// there is sent on), then the relay runs again with the same entry.
	require.NoError(t, relayer.Enqueue(ctx, "dst", []persistence.NewJob{{ID: "a", Payload: []byte("plain")}}))
	res, err = owner.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 3, Fetch: 10, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NotNil(t, res.Batch, "the plain job reached a's new shard")
	_, err = owner.Advance(ctx, l, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: 4, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NoError(t, relayer.EnqueueRelay(ctx, "dst", "src/0", []string{"5-0"}, emit))
	_, err = relayer.GetJob(ctx, "dst", "a")
	require.ErrorIs(t, err, persistence.ErrNotFound, "the emit was handed over again")
	// A later entry goes through.
	require.NoError(t, relayer.EnqueueRelay(ctx, "dst", "src/0", []string{"6-0"}, []persistence.NewJob{{ID: "a", Payload: []byte("next")}}))
	info, err := relayer.GetJob(ctx, "dst", "a")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 1)
}

// A relay that wrote an emit into a shard being drained, and runs again
// only after the whole reshard ended, does not hand the emit to the id's new
// shard a second time: for entries older than the end, the relay still asks
// the drained generation's relay marks.
func TestRelayAgainAfterTheReshardEndedHandsNoEmitTwice(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.NewServer(t, redistest.Options{}).Client(t)
	relayer, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	owner, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, relayer.RegisterQueue(ctx, persistence.QueueSpec{Name: "dst", Shards: 2}))
	sh, err := owner.Reshard(ctx, "dst", 3)
	require.NoError(t, err)
	_, err = relayer.Shape(ctx, "dst")
	require.NoError(t, err)
	emit := []persistence.NewJob{{ID: "a", Payload: []byte("emit-a")}}
	require.NoError(t, relayer.EnqueueRelay(ctx, "dst", "src/0", []string{"5-0"}, emit))
	for _, ref := range sh.From.Refs("dst") {
		drainShard(t, owner, "dst", ref.Shard)
	}
	done, err := owner.FinishReshard(ctx, "dst")
	require.NoError(t, err)
	require.True(t, done)

	// The emit moved to a's new shard and is handled there.
	l, _, err := owner.AcquireShard(ctx, persistence.ShardRef{Queue: "dst", Shard: sh.Current.Shard("a")}, "n", 10*time.Second)
	require.NoError(t, err)
	res, err := owner.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 3})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	require.Equal(t, "a", res.Batch.Jobs[0].ID)
	_, err = owner.Advance(ctx, l, persistence.AdvanceRequest{Settle: res.Batch.Seq, NextSeq: 2, MaxRetryCount: 3})
	require.NoError(t, err)

	// The relayer learns that the reshard ended, then relays the same
	// entry again (a store that starts after the end relays the same way).
	now, err := relayer.Shape(ctx, "dst")
	require.NoError(t, err)
	require.False(t, now.Resharding())
	fresh, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	for _, s := range []*redisstore.Store{relayer, fresh} {
		require.NoError(t, s.EnqueueRelay(ctx, "dst", "src/0", []string{"5-0"}, emit))
		_, err = s.GetJob(ctx, "dst", "a")
		require.ErrorIs(t, err, persistence.ErrNotFound, "the emit was handed over again")
	}
	// Later entries go through, one written long after the end too.
	later := fmt.Sprintf("%d-0", time.Now().Add(time.Hour).UnixMilli())
	require.NoError(t, relayer.EnqueueRelay(ctx, "dst", "src/0", []string{"6-0", later},
		[]persistence.NewJob{{ID: "a", Payload: []byte("next")}, {ID: "a", Payload: []byte("last")}}))
	info, err := relayer.GetJob(ctx, "dst", "a")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 2)
}

// A shard number that a later generation takes again starts without the
// relay marks its earlier shard left: they name entries that shard took.
// Kept, they would make the new shard skip an emit it never got.
func TestReshardClearsTheRelayMarksOfAShardTakenAgain(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.NewServer(t, redistest.Options{}).Client(t)
	s, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "dst", Shards: 2}))
	var x, y string // x on shard 0 of 2; y on shard 0 of the next 2
	for i := 0; x == "" || y == ""; i++ {
		id := fmt.Sprintf("id%d", i)
		if persistence.ShardOf(id, 2) == 0 && x == "" {
			x = id
		} else if persistence.ShardOf(id, 2) == 0 && id != x && y == "" {
			y = id
		}
	}
	require.NoError(t, s.EnqueueRelay(ctx, "dst", "src/0", []string{"9-0"}, []persistence.NewJob{{ID: x, Payload: []byte("x")}}))
	reshardAll(t, s, "dst", 3)
	reshardAll(t, s, "dst", 2)
	sh, err := s.Shape(ctx, "dst")
	require.NoError(t, err)
	require.Equal(t, 0, sh.Current.Shard(y), "y's shard is the number x's had")
	require.NoError(t, s.EnqueueRelay(ctx, "dst", "src/0", []string{"5-0"}, []persistence.NewJob{{ID: y, Payload: []byte("y")}}))
	info, err := s.GetJob(ctx, "dst", y)
	require.NoError(t, err, "the emit to y was written")
	require.Len(t, info.Queued.Payloads, 1)
}
