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
	"github.com/orderlyhq/orderly/persistence"
)

// weightedRun starts a node of concurrency 1 whose two queues each have a
// backlog of n jobs, and returns the queue of each handler call in the
// order they ran.
func weightedRun(t *testing.T, sched orderly.Scheduler, highWeight, n int) []string {
	e := newEnv(t)
	for _, q := range []string{"high", "low"} {
		require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: q, Shards: 2}))
		var jobs []client.Job
		for i := range n {
			jobs = append(jobs, client.Job{ID: fmt.Sprintf("%s-%d", q, i)})
		}
		e.enqueue(q, jobs...)
	}
	var mu sync.Mutex
	var order []string
	done := make(chan struct{})
	handler := func(ctx context.Context, b *orderly.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, b.Queue)
		if len(order) == 2*n {
			close(done)
		}
		time.Sleep(time.Millisecond) // a call that takes a little while
		return nil
	}
	w := func(q string, weight int) orderly.Worker {
		return orderly.Worker{Queue: q, Shards: 2, BatchSize: 1, Prefetch: 1, Weight: weight, Handler: handler}
	}
	e.start(orderly.Config{Concurrency: 1, Scheduler: sched, Workers: []orderly.Worker{w("high", highWeight), w("low", 0)}})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the backlogs did not drain")
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), order...)
}

// Under the strict scheduler, once the high-weight queue's shards wait for
// the node's one permit, the low one runs only after them.
func TestStrictSchedulerServesTheHigherWeightFirst(t *testing.T) {
	t.Parallel()
	const n = 40
	order := weightedRun(t, orderly.SchedulerStrict, 5, n)
	// Skip the start: until both high shards hold their lease and ask,
	// low may run.
	first := 0
	for i, q := range order {
		if q == "high" {
			first = i
			break
		}
	}
	lowBetween := 0
	last := 0
	for i, q := range order {
		if q == "high" {
			last = i
		}
	}
	for _, q := range order[first:last] {
		if q == "low" {
			lowBetween++
		}
	}
	t.Logf("order: %v", order)
	require.LessOrEqual(t, lowBetween, 4, "low ran while high waited")
}

// Under the weighted scheduler, a queue of weight 3 makes about three
// calls for each call of a queue of weight 1 while both have a backlog.
func TestWeightedSchedulerSharesByWeight(t *testing.T) {
	t.Parallel()
	const n = 60
	order := weightedRun(t, orderly.SchedulerWeighted, 3, n)
	// While both have work: up to the point where high has drained.
	high, low := 0, 0
	for _, q := range order {
		if q == "high" {
			high++
		} else {
			low++
		}
		if high == n {
			break
		}
	}
	t.Logf("high %d, low %d when high drained", high, low)
	require.InDelta(t, 3.0, float64(high)/float64(max(low, 1)), 1.0)
}

func TestWeightNeedsItsScheduler(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := orderly.NewNode(e.store, &orderly.Config{Workers: []orderly.Worker{{Queue: "a", Weight: 2, Handler: func(context.Context, *orderly.Batch) error { return nil }}}})
	require.ErrorContains(t, err, `worker a has a Weight, which only the "weighted" and "strict" schedulers use`)
	_, err = orderly.NewNode(e.store, &orderly.Config{Scheduler: orderly.SchedulerStrict, Workers: []orderly.Worker{{Queue: "a", Weight: -1, Handler: func(context.Context, *orderly.Batch) error { return nil }}}})
	require.ErrorContains(t, err, "Weight must be between 1 and 1000")
}
