package orderly_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// loseDeadReport is a go-redis hook that, once armed, lets the next script
// call whose reply reports payloads moved to the morgue (an Advance reply,
// advance.lua's fourth value) run in Redis, then drops its reply, as a
// connection that breaks after the write would.
type loseDeadReport struct {
	armed   atomic.Bool
	dropped atomic.Int32
}

func (h *loseDeadReport) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseDeadReport) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *loseDeadReport) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c, ok := cmd.(*redis.Cmd)
		if err != nil || !ok || !h.armed.Load() {
			return err
		}
		res, ok := c.Val().([]any)
		if !ok || len(res) < 8 {
			return err
		}
		if dead, _ := res[3].(string); dead == "" || !h.armed.CompareAndSwap(true, false) {
			return err
		}
		h.dropped.Add(1)
		lost := errors.New("read tcp: connection reset by peer (the reply was lost)")
		c.SetErr(lost)
		return lost
	}
}

// The reply of the Advance that moved a payload to the morgue is lost after
// the script ran in Redis (docs/contract.md §3.5): the node retries the same
// Advance, and the retries_exhausted hook still receives the payload, once
// the retry's reply comes.
func TestLostAdvanceReplyStillReachesTheHook(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: db.Addr})
	defer rdb.Close()
	hook := &loseDeadReport{}
	hook.armed.Store(true)
	rdb.AddHook(hook)
	store, err := redisstore.New(rdb, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	c, err := client.NewFromStore(store, nil)
	require.NoError(t, err)
	dead := make(chan []orderly.Job, 4)
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: "lossy-link", Logger: testLogger(t),
		Workers: []orderly.Worker{{
			Queue: "q", Shards: 1, MaxRetryCount: orderly.NoRetries,
			Handler:          func(context.Context, *orderly.Batch) error { return errors.New("cannot handle it") },
			RetriesExhausted: func(_ context.Context, jobs []orderly.Job) { dead <- jobs },
		}},
	})
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, n.Stop(ctx))
	}()
	require.NoError(t, c.Enqueue(context.Background(), "q", client.Job{ID: "doomed", Payload: []byte("the payload")}))
	select {
	case jobs := <-dead:
		require.Len(t, jobs, 1)
		require.Equal(t, "doomed", jobs[0].ID)
		require.Equal(t, "the payload", string(jobs[0].Payloads[0].Data))
		require.Equal(t, "cannot handle it", jobs[0].Error)
	case <-time.After(30 * time.Second):
		t.Fatalf("the hook never received the morgued payload (replies dropped: %d)", hook.dropped.Load())
	}
	require.EqualValues(t, 1, hook.dropped.Load(), "the first reply that carried the report was lost")
	page, err := store.Stats(context.Background(), "q")
	require.NoError(t, err)
	require.EqualValues(t, 1, page[0].MorgueLength)
	require.EqualValues(t, 1, page[0].Failed, "the retried Advance settled nothing twice")
}
