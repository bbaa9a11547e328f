package orderly_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
)

// §3.11: one PartialFailure mixes every outcome: a success, a failure
// (through the policy, which sees the error), a snooze, a dead id and a
// discarded one; Dead reaches RetriesExhausted with 0 retries.
func TestOutcomesMixedInOnePartialFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	errBoom := errors.New("boom")
	var mu sync.Mutex
	seen := map[string][]int{} // id -> retry counts seen
	var policyErrs []error
	dead := make(chan []orderly.Job, 1)
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, BatchSize: 10, MaxRetryCount: 25,
		RetryIn: func(n int, err error) time.Duration {
			mu.Lock()
			policyErrs = append(policyErrs, err)
			mu.Unlock()
			return 10 * time.Millisecond
		},
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			failed := map[string]error{}
			for _, j := range b.Jobs {
				seen[j.ID] = append(seen[j.ID], j.RetryCount)
				if len(seen[j.ID]) > 1 {
					continue // acknowledged the second time
				}
				switch j.ID {
				case "fail":
					failed[j.ID] = fmt.Errorf("wrapped: %w", errBoom)
				case "snooze":
					failed[j.ID] = orderly.Snooze(30 * time.Millisecond)
				case "dead":
					failed[j.ID] = fmt.Errorf("ctx: %w", orderly.Dead(errors.New("poison")))
				case "discard":
					failed[j.ID] = orderly.Discard(errors.New("stale"))
				}
			}
			return orderly.FailIDs(failed)
		},
		RetriesExhausted: func(ctx context.Context, jobs []orderly.Job) { dead <- jobs },
	}}})
	e.enqueue("q", client.Job{ID: "ok"}, client.Job{ID: "fail"}, client.Job{ID: "snooze"},
		client.Job{ID: "dead", Payload: []byte("d")}, client.Job{ID: "discard"})
	select {
	case jobs := <-dead:
		require.Len(t, jobs, 1)
		require.Equal(t, "dead", jobs[0].ID)
		require.Equal(t, "poison", jobs[0].Error)
		require.Equal(t, 0, jobs[0].RetryCount)
		require.Equal(t, "d", string(jobs[0].Payloads[0].Data))
	case <-time.After(10 * time.Second):
		t.Fatal("retries_exhausted was not called")
	}
	require.Eventually(t, func() bool { return e.stats("q").Processed == 3 }, 10*time.Second, 10*time.Millisecond)
	st := e.stats("q")
	require.EqualValues(t, 1, st.Snoozed)
	require.EqualValues(t, 1, st.Discarded)
	require.EqualValues(t, 1, st.MorgueLength)
	require.EqualValues(t, 2, st.Failed, "the failure and the dead id")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{-1, 0}, seen["fail"])
	require.Equal(t, []int{-1, -1}, seen["snooze"], "a snooze counts no failure")
	require.Equal(t, []int{-1}, seen["dead"])
	require.Equal(t, []int{-1}, seen["discard"])
	require.Len(t, policyErrs, 1, "only the failure reaches the policy")
	require.ErrorIs(t, policyErrs[0], errBoom)
}

// §3.11: an outcome returned for the whole call applies to every id of it,
// also from a typed handler.
func TestOutcomesWholeCallAndTyped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls atomic.Int32
	e.start(orderly.Config{Workers: []orderly.Worker{{
		Queue: "whole", Shards: 1, BatchSize: 10,
		Handler: func(ctx context.Context, b *orderly.Batch) error {
			calls.Add(1)
			return orderly.Discard(nil)
		},
	}, {
		Queue: "typed", Shards: 1, BatchSize: 10,
		Handler: orderly.Handle(func(ctx context.Context, j orderly.TypedJob[string]) error {
			return fmt.Errorf("typed: %w", orderly.Dead(nil))
		}),
	}}})
	e.enqueue("whole", client.Job{ID: "a"}, client.Job{ID: "b"})
	e.enqueue("typed", client.Job{ID: "t", Payload: []byte(`"x"`)})
	require.Eventually(t, func() bool { return e.stats("whole").Discarded == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return e.stats("typed").MorgueLength == 1 }, 10*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, e.stats("whole").Length)
	require.EqualValues(t, 1, calls.Load(), "discarded ids are never delivered again")
}

// Errors built with the constructors are recognized wrapped, and say what
// they are.
func TestOutcomeErrors(t *testing.T) {
	require.Equal(t, "snoozed for 1s", orderly.Snooze(time.Second).Error())
	reason := errors.New("why")
	require.Equal(t, "dead: why", orderly.Dead(reason).Error())
	require.ErrorIs(t, orderly.Dead(reason), reason)
	require.Equal(t, "discarded: why", orderly.Discard(reason).Error())
	require.Equal(t, "dead", orderly.Dead(nil).Error())
}

// §3.5 and §3.11: a retries-exhausted hook still at work when the node's
// drain deadline passes is taken as not done: the report stays
// unconfirmed, and the next owner's hook receives the same dead job.
func TestRetriesExhaustedHookOutlivedByTheLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	entered := make(chan struct{}, 1)
	worker := orderly.Worker{Queue: "q", Shards: 1,
		Handler: func(ctx context.Context, b *orderly.Batch) error { return orderly.Dead(errors.New("poison")) },
		RetriesExhausted: func(ctx context.Context, jobs []orderly.Job) {
			entered <- struct{}{}
			<-ctx.Done() // never done in time
		}}
	a, err := orderly.NewNode(e.store, &orderly.Config{Name: "a", Logger: testLogger(t), LeaseTTL: 500 * time.Millisecond,
		Workers: []orderly.Worker{worker}})
	require.NoError(t, err)
	require.NoError(t, a.Start(e.ctx))
	e.enqueue("q", client.Job{ID: "x", Payload: []byte("p")})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the hook was not called")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_ = a.Stop(ctx) // the drain deadline passes while the hook waits
	cancel()

	dead := make(chan []orderly.Job, 1)
	worker.RetriesExhausted = func(ctx context.Context, jobs []orderly.Job) { dead <- jobs }
	e.start(orderly.Config{Name: "b", LeaseTTL: 500 * time.Millisecond, Workers: []orderly.Worker{worker}})
	select {
	case jobs := <-dead:
		require.Len(t, jobs, 1)
		require.Equal(t, "x", jobs[0].ID)
		require.Equal(t, "poison", jobs[0].Error)
	case <-time.After(10 * time.Second):
		t.Fatal("the next owner did not report the dead job again")
	}
}
