package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnqueuePriority checks the job object's "priority" (docs/contract.md
// §3.16): stored, shown by the lookup and the listing when it is not 1,
// and refused outside 1 to 4.
func TestEnqueuePriority(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a", "payload": 1, "priority": 3}, {"id": "b", "priority": 1}, {"id": "c", "priority": null}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	info, err := e.store.GetJob(e.ctx, "q", "a")
	require.NoError(t, err)
	require.Equal(t, 3, info.Queued.Priority)
	a = e.do("GET", "/api/v1/queues/q/jobs/a", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"priority":3`)
	a = e.do("GET", "/api/v1/queues/q/jobs/b", "")
	require.NotContains(t, a.body, `"priority"`, "priority 1 is not shown")
	a = e.do("GET", "/api/v1/queues/q/jobs?order=perform_at", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"priority":3`)

	for _, tc := range []struct{ body, msg string }{
		{`[{"id": "x", "priority": 0}]`, "must be an integer from 1 to 4"},
		{`[{"id": "x", "priority": 5}]`, "must be an integer from 1 to 4"},
		{`[{"id": "x", "priority": 1.5}]`, "must be an integer from 1 to 4"},
		{`[{"id": "x", "priority": "x"}]`, "must be an integer from 1 to 4, got a string"},
	} {
		a := e.do("POST", "/api/v1/queues/q/jobs", tc.body)
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, "jobs[0].priority", field, a.body)
		require.Contains(t, msg, tc.msg)
	}
	_, err = e.store.GetJob(e.ctx, "q", "x")
	require.Error(t, err)
}
