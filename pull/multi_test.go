package pull_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
)

// A pull takes every waiting call its max_ids allows, one lease over
// several shards' calls; its answer goes to each call for its own ids.
func TestPullTakesSeveralCallsInOneLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	var jobs []client.Job
	for i := range 12 {
		jobs = append(jobs, client.Job{ID: "m" + strconv.Itoa(i), Payload: []byte(`1`)})
	}
	require.NoError(t, e.client.Enqueue(ctx, "many", jobs...))
	// Each of the 4 shards has ids: 4 calls wait once every shard asked.
	require.Eventually(t, func() bool { return e.broker.Stats()["many"].Pending == 4 }, 10*time.Second, 5*time.Millisecond)
	l := e.pullSome(adminToken, "many", 3)
	require.Len(t, l.Jobs, 3, "three calls of batch 1 in one lease")
	require.Equal(t, 1, e.broker.Stats()["many"].Pending)
	require.Equal(t, 1, e.broker.Stats()["many"].Held)
	failed := l.Jobs[1].ID
	status, out := e.answer(adminToken, "many", l.Lease, `{"failed":{"`+failed+`":"boom"}}`)
	require.Equal(t, http.StatusOK, status, out)
	require.JSONEq(t, `{"accepted":true}`, out)
	// Drain the rest: the failed id comes back once, with its failure;
	// the acknowledged ones never do.
	again := map[string]int{}
	require.Eventually(t, func() bool {
		if n := e.pull(adminToken, "many", 3, 0.1); n != nil {
			for _, j := range n.Jobs {
				again[j.ID]++
				if j.ID == failed {
					require.Equal(t, 0, j.RetryCount)
					require.Equal(t, "boom", j.Error)
				}
			}
			status, out := e.answer(adminToken, "many", n.Lease, `{}`)
			require.Equal(t, http.StatusOK, status, out)
		}
		for _, j := range jobs {
			if _, err := e.store.GetJob(ctx, "many", j.ID); err == nil {
				return false
			}
		}
		return true
	}, 20*time.Second, time.Millisecond)
	require.Equal(t, 1, again[failed])
	require.Zero(t, again[l.Jobs[0].ID])
	require.Zero(t, again[l.Jobs[2].ID])
}

// With ConcurrentCalls, every call of a shard's window waits for a pull at
// once: one pull takes many ids of one shard at batch size 1, and the
// window's next fetch waits for all of them.
func TestPullTakesAWholeWindowOfOneShard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	var jobs []client.Job
	for i := range 30 {
		jobs = append(jobs, client.Job{ID: "w" + strconv.Itoa(i), Payload: []byte(`1`)})
	}
	require.NoError(t, e.client.Enqueue(ctx, "wide", jobs...))
	// The first window holds Prefetch (10) ids: 10 calls of batch 1 wait.
	require.Eventually(t, func() bool { return e.broker.Stats()["wide"].Pending == 10 }, 10*time.Second, 5*time.Millisecond)
	l := e.pullSome(adminToken, "wide", 30)
	require.Len(t, l.Jobs, 10, "the window's ten calls in one lease")
	seen := map[string]bool{}
	for _, j := range l.Jobs {
		require.False(t, seen[j.ID], "an id is in one call of a window")
		seen[j.ID] = true
	}
	failed := l.Jobs[3].ID
	status, out := e.answer(adminToken, "wide", l.Lease, `{"failed":{"`+failed+`":"boom"}}`)
	require.Equal(t, http.StatusOK, status, out)
	// The rest drains; the failed id comes back once, the others never.
	again := map[string]int{}
	require.Eventually(t, func() bool {
		if n := e.pull(adminToken, "wide", 30, 0.1); n != nil {
			for _, j := range n.Jobs {
				again[j.ID]++
			}
			status, out := e.answer(adminToken, "wide", n.Lease, `{}`)
			require.Equal(t, http.StatusOK, status, out)
		}
		st, err := e.store.Stats(ctx, "wide")
		require.NoError(t, err)
		return st[0].Length == 0 && st[0].Busy == 0
	}, 20*time.Second, time.Millisecond)
	require.Equal(t, 1, again[failed])
	for id := range seen {
		if id != failed {
			require.Zero(t, again[id], id)
		}
	}
	require.Len(t, again, 21, "20 ids never pulled, and the failed one")
}
