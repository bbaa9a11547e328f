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
