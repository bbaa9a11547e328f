package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// flushMidPipeline splits the next pipeline of two or more commands: the
// first command goes out alone, then the server's script cache is flushed,
// then the rest go out, to meet NOSCRIPT. So the calls of one pipeline
// meet a server that lost its scripts halfway, as after a failover.
type flushMidPipeline struct {
	flusher *redis.Client
	armed   atomic.Bool
	split   atomic.Bool
}

func (h *flushMidPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *flushMidPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *flushMidPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) < 2 || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmds)
		}
		h.split.Store(true)
		_ = next(ctx, cmds[:1])
		if err := h.flusher.ScriptFlush(ctx).Err(); err != nil {
			return err
		}
		return next(ctx, cmds[1:])
	}
}

// A pipelined bulk action whose calls meet NOSCRIPT halfway sends only the
// calls that did not run again, once, and counts every change: the calls
// that ran before the flush are neither lost nor run twice.
//
// Not parallel: the flush empties the script cache of the server the
// package's tests share, and a parallel test whose call met NOSCRIPT twice
// (after its own reload) would fail.
func TestPipelineNoScriptHalfway(t *testing.T) {
	db := redistest.New(t)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: func() time.Time { return now }})
	require.NoError(t, err)
	const shards = 4
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: shards}))
	var jobs []persistence.NewJob
	perShard := map[int]int{}
	for i := 0; len(perShard) < shards; i++ {
		id := string(rune('a' + i))
		perShard[persistence.ShardOf(id, shards)]++
		jobs = append(jobs, persistence.NewJob{ID: id, PerformAt: now.Add(time.Hour)})
	}
	require.NoError(t, s.Enqueue(ctx, "q", jobs))
	require.NoError(t, s.LoadScripts(ctx))

	hook := &flushMidPipeline{flusher: db.Client}
	db.Client.AddHook(hook)
	hook.armed.Store(true)
	n, err := s.PerformAllNow(ctx, "q")
	require.NoError(t, err)
	require.True(t, hook.split.Load(), "the action's pipeline met the flush")
	require.Equal(t, len(jobs), n, "every job made due, counted once")

	hook.armed.Store(true)
	page, err := s.ListJobs(ctx, "q", persistence.ListOptions{Order: persistence.OrderPerformAt})
	require.NoError(t, err)
	require.Len(t, page.Jobs, len(jobs), "a listing across shards survives the flush too")
	for _, j := range page.Jobs {
		require.True(t, j.PerformAt.Equal(now), "%s due now", j.ID)
	}
}
