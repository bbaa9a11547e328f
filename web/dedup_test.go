package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// TestEnqueueDedupKey checks "dedup_key" and the answer's "duplicates"
// (docs/contract.md §3.12): a key seen for the id within the queue's
// window is acknowledged and not stored.
func TestEnqueueDedupKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: "dd", Shards: 2, DedupWindow: time.Hour}))
	a := e.do("POST", "/api/v1/queues/dd/jobs", `[
		{"id": "a", "payload": 1, "dedup_key": "k"},
		{"id": "a", "payload": 2, "dedup_key": "k"},
		{"id": "b", "payload": 3, "dedup_key": null}
	]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	require.Equal(t, `{"enqueued":3,"duplicates":1}`+"\n", a.body)
	a = e.do("POST", "/api/v1/queues/dd/jobs", `[{"id": "a", "payload": 4, "dedup_key": "k"}, {"id": "b", "payload": 5, "dedup_key": "k"}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	require.Equal(t, `{"enqueued":2,"duplicates":1}`+"\n", a.body)

	info, err := e.store.GetJob(e.ctx, "dd", "a")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 1)
	require.Equal(t, "1", string(info.Queued.Payloads[0].Data))
	info, err = e.store.GetJob(e.ctx, "dd", "b")
	require.NoError(t, err)
	require.Len(t, info.Queued.Payloads, 2)

	// A queue without a window stores every job.
	a = e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a", "dedup_key": "k"}, {"id": "a", "payload": 2, "dedup_key": "k"}]`)
	require.Equal(t, `{"enqueued":2,"duplicates":0}`+"\n", a.body)
}

// TestEnqueueDedupKeyInvalid checks the errors of a bad "dedup_key".
func TestEnqueueDedupKeyInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ body, field, msg string }{
		{`[{"id": "a", "dedup_key": 5}]`, "jobs[0].dedup_key", "string"},
		{`[{"id": "a"}, {"id": "a", "dedup_key": "` + strings.Repeat("x", persistence.MaxDedupKeyBytes+1) + `"}]`, "jobs[1].dedup_key", "more than the limit of 512"},
		{`[{"id": "a", "dedup_key": "k", "dedup_key": "l"}]`, "jobs[0].dedup_key", "given more than once"},
	} {
		a := e.do("POST", "/api/v1/queues/q/jobs", tc.body)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, tc.field, field, a.body)
		require.Contains(t, msg, tc.msg)
	}
	_, err := e.store.GetJob(e.ctx, "q", "a")
	require.ErrorIs(t, err, persistence.ErrNotFound, "nothing is stored")
}
