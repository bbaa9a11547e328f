package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// TestDowngrade rolls a store back to layout 1 and lets the previous
// release's scripts serve it: queued, delayed, retrying, in-flight and
// morgue jobs (one with payloads in the overflow) and ids of priority 2 to
// 4 (docs/contract.md §3.16: the priority is dropped) come out whole.
func TestDowngrade(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	clk := clock.NewSimulated(time.Unix(1_700_000_000, 0))
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: clk.Now})
	require.NoError(t, err)
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	sc := func(v float64) *float64 { return &v }
	jobs := []persistence.NewJob{
		{ID: "dead", Payload: []byte("d"), Score: sc(1), PerformAt: clk.Now().Add(-3 * time.Second)},
		{ID: "retry", Payload: []byte("r"), Score: sc(1), PerformAt: clk.Now().Add(-2 * time.Second)},
		{ID: "flight", Payload: []byte("f"), Score: sc(1), PerformAt: clk.Now().Add(-time.Second)},
		{ID: "later", Payload: []byte("l"), Score: sc(1), PerformAt: clk.Now().Add(time.Hour)},
		{ID: "pri", Payload: []byte("p"), Score: sc(1), Priority: 3},
		{ID: "prilater", Payload: []byte("pl"), Score: sc(1), Priority: 2, PerformAt: clk.Now().Add(time.Hour)},
	}
	for i := range 3000 {
		jobs = append(jobs, persistence.NewJob{ID: "big", Payload: []byte(fmt.Sprintf("b%04d", i)), Score: sc(float64(i))})
	}
	require.NoError(t, s.Enqueue(ctx, "q", jobs))
	l, _, err := s.AcquireShard(ctx, ref, "n", 200*time.Millisecond)
	require.NoError(t, err)
	adv := func(req persistence.AdvanceRequest) persistence.AdvanceResult {
		t.Helper()
		res, err := s.Advance(ctx, l, req)
		require.NoError(t, err)
		return res
	}
	adv(persistence.AdvanceRequest{NextSeq: 1, Fetch: 1})
	adv(persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 1, Failures: []persistence.Failure{{ID: "dead", Error: "gone"}}})
	adv(persistence.AdvanceRequest{Settle: 2, NextSeq: 3, Fetch: 1, MaxRetryCount: 25,
		Failures: []persistence.Failure{{ID: "retry", Error: "again", RetryAt: clk.Now().Add(time.Minute)}}})
	// flight is in flight; its owner disappears.

	require.ErrorIs(t, s.Downgrade(ctx), redisstore.ErrServed)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, s.Downgrade(ctx))
	n, err := db.Client.Keys(ctx, db.Prefix+":{q:0}:2:*").Result()
	require.NoError(t, err)
	require.Empty(t, n, "no layout 2 key left")

	old := newV1Store(db.Client, db.Prefix, clk.Now)
	lo, restored, err := old.AcquireShard(ctx, ref, "old", time.Minute)
	require.NoError(t, err, "the fence is gone")
	require.Zero(t, restored)
	clk.Advance(2 * time.Hour)
	got := map[string][]string{}
	rcs := map[string]int{}
	seq, settle := int64(0), int64(0)
	for {
		seq++
		res, err := old.Advance(ctx, lo, persistence.AdvanceRequest{Settle: settle, NextSeq: seq, Fetch: 10, MaxRetryCount: 25})
		require.NoError(t, err)
		if res.Batch == nil {
			break
		}
		settle = res.Batch.Seq
		for _, j := range res.Batch.Jobs {
			for _, p := range j.Payloads {
				got[j.ID] = append(got[j.ID], string(p.Data))
			}
			rcs[j.ID] = j.RetryCount
		}
	}
	require.Equal(t, []string{"f"}, got["flight"])
	require.Equal(t, []string{"r"}, got["retry"])
	require.Equal(t, 0, rcs["retry"])
	require.Equal(t, []string{"l"}, got["later"])
	require.Equal(t, []string{"p"}, got["pri"])
	require.Equal(t, []string{"pl"}, got["prilater"])
	require.Len(t, got["big"], 3000)
	for i, p := range got["big"] {
		require.Equal(t, fmt.Sprintf("b%04d", i), p)
	}
	require.NotContains(t, got, "dead")
	m, err := db.Client.ZRangeWithScores(ctx, db.Prefix+":{q:0}:m:dead", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, m, 1)
	require.Equal(t, "d", m[0].Member)
	require.Equal(t, "gone", db.Client.HGet(ctx, db.Prefix+":{q:0}:morgue_errors", "dead").Val())
	require.Equal(t, "2", db.Client.HGet(ctx, db.Prefix+":{q:0}:stats", "failed").Val())
}

// A resharded queue downgrades only when its shards are 0 to count-1, as
// the previous release numbers them: elsewhere, Downgrade refuses before it
// changes anything and says what to do; there, the registry gets the plain
// count back and the previous release serves every id.
func TestDowngradeResharded(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "r", Shards: 2}))
	var jobs []persistence.NewJob
	for i := range 40 {
		jobs = append(jobs, persistence.NewJob{ID: fmt.Sprintf("id%d", i), Payload: []byte("p")})
	}
	require.NoError(t, s.Enqueue(ctx, "r", jobs))
	reshardAll(t, s, "r", 5) // shards 2 to 6
	err = s.Downgrade(ctx)
	require.ErrorContains(t, err, "reshard it to at most 2 shards first")
	require.EqualValues(t, 1, db.Client.Exists(ctx, db.Prefix+":layout").Val(), "nothing changed")

	reshardAll(t, s, "r", 2) // shards 0 and 1
	require.NoError(t, s.Downgrade(ctx))
	require.Equal(t, "2", db.Client.HGet(ctx, db.Prefix+":queues", "r").Val())
	old := newV1Store(db.Client, db.Prefix, time.Now)
	got := map[string]bool{}
	for shard := range 2 {
		l, _, err := old.AcquireShard(ctx, persistence.ShardRef{Queue: "r", Shard: shard}, "old", time.Minute)
		require.NoError(t, err)
		res, err := old.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Fetch: 100, MaxRetryCount: 25})
		require.NoError(t, err)
		require.NotNil(t, res.Batch)
		for _, j := range res.Batch.Jobs {
			require.Equal(t, persistence.ShardOf(j.ID, 2), shard)
			got[j.ID] = true
		}
	}
	require.Len(t, got, 40, "every id is served by the previous release")
}
