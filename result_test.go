package orderly_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// finishedOf returns the finished record of id, or nil.
func (e *env) finishedOf(queue, id string) *persistence.FinishedJob {
	e.t.Helper()
	info, err := e.store.GetJob(e.ctx, queue, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	require.NoError(e.t, err)
	return info.Finished
}

// On a queue with RetainFinished, an acknowledged id keeps a finished
// record with the result its handler set (Job.SetResult) and the calls it
// took; a failed id keeps none; an oversized result fails its id
// (docs/contract.md §3.14).
func TestSetResultKeptWithRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := true
	e.start(orderly.Config{Workers: []orderly.Worker{
		{Queue: "orders", Shards: 1, BatchSize: 4, RetainFinished: time.Hour, MaxRetryCount: 1,
			RetryIn: func(int, error) time.Duration { return 0 },
			Handler: func(ctx context.Context, b *orderly.Batch) error {
				failed := map[string]error{}
				for _, j := range b.Jobs {
					switch j.ID {
					case "retried":
						if first {
							first = false
							failed[j.ID] = errors.New("flaky")
							continue
						}
						j.SetResult([]byte(`{"n":2}`))
					case "huge":
						j.SetResult(make([]byte, orderly.MaxResultBytes+1))
					case "fails":
						j.SetResult([]byte("never kept"))
						failed[j.ID] = errors.New("boom")
					default:
						j.SetResult([]byte("first"))
						j.SetResult([]byte("last"))
					}
				}
				return orderly.FailIDs(failed)
			}},
		{Queue: "plain", Shards: 1, Handler: func(ctx context.Context, b *orderly.Batch) error {
			for _, j := range b.Jobs {
				j.SetResult([]byte("dropped"))
			}
			return nil
		}},
	}})
	e.enqueue("orders", client.Job{ID: "ok"}, client.Job{ID: "retried"}, client.Job{ID: "huge"}, client.Job{ID: "fails"})
	e.enqueue("plain", client.Job{ID: "p"})
	require.Eventually(t, func() bool {
		return e.finishedOf("orders", "retried") != nil && e.stats("orders").MorgueLength == 2 && e.stats("plain").Processed == 1
	}, 10*time.Second, 10*time.Millisecond)

	ok := e.finishedOf("orders", "ok")
	require.NotNil(t, ok)
	require.Equal(t, "last", string(ok.Result), "the last SetResult wins")
	require.Equal(t, 1, ok.Attempts)
	r := e.finishedOf("orders", "retried")
	require.Equal(t, `{"n":2}`, string(r.Result))
	require.Equal(t, 2, r.Attempts)
	require.Equal(t, "flaky", r.Error)
	require.Nil(t, e.finishedOf("orders", "fails"), "a failed id keeps no result")
	info, err := e.store.GetJob(e.ctx, "orders", "huge")
	require.NoError(t, err)
	require.Nil(t, info.Finished)
	require.NotNil(t, info.Morgue, "an oversized result fails its id")
	require.Contains(t, info.Morgue.Error, "SetResult")
	require.Nil(t, e.finishedOf("plain", "p"), "without retention nothing is kept")
}

// The owner deletes finished records soon after they are retain_finished
// old, on a shard it has served for a while (docs/contract.md §3.14).
func TestFinishedRetentionEnforced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, RetainFinished: 2 * time.Second,
		Handler: func(context.Context, *orderly.Batch) error { return nil },
	}}})
	e.enqueue("q", client.Job{ID: "a", Payload: []byte("1")})
	require.Eventually(t, func() bool { return e.finishedOf("q", "a") != nil }, 20*time.Second, 20*time.Millisecond,
		"the job finishes")
	require.Eventually(t, func() bool { return e.finishedOf("q", "a") == nil }, 20*time.Second, 50*time.Millisecond,
		"the expired record is deleted")
}
