package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/contract.md §3.13: POST .../jobs/{id}/actions/cancel kills (by
// default) or deletes the queued payloads, reports a call in flight, and
// answers 404 for an id neither queued nor in flight; a bad mode is 400.
func TestActionCancelJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "a", "payload": 1, "score": 1}, {"id": "a", "payload": 2, "score": 2}, {"id": "b"}, {"id": "c"}]`)
	a := e.do("POST", "/api/v1/queues/q/jobs/a/actions/cancel", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"mode": "kill", "killed": 2, "deleted": 0, "in_flight": false}`, a.body)
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"cancelled"`)

	a = e.do("POST", "/api/v1/queues/q/jobs/b/actions/cancel", `{"mode": "delete"}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"mode": "delete", "killed": 0, "deleted": 1, "in_flight": false}`, a.body)

	a = e.do("POST", "/api/v1/queues/q/jobs/b/actions/cancel", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	a = e.do("POST", "/api/v1/queues/q/jobs/c/actions/cancel", `{"mode": "bury"}`)
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	_, field := a.errorBody(t)
	require.Equal(t, "mode", field)
	a = e.do("POST", "/api/v1/queues/q/jobs/c/actions/cancel", `{"other": 1}`)
	require.Equal(t, http.StatusBadRequest, a.status, a.body)

	e.fetch("c")
	a = e.do("POST", "/api/v1/queues/q/jobs/c/actions/cancel", "{}")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"mode": "kill", "killed": 0, "deleted": 0, "in_flight": true}`, a.body)
}
