package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

func stateful(queues map[string]int) option {
	return func(c *web.Config) { c.StateQueues = queues }
}

// GET and PUT /api/v1/queues/{q}/state/{id}: read, compare-and-set (409 on
// a stale version), base64 for bytes that are not JSON, null deletes, 404
// for a queue that is not stateful; the job lookup shows the state.
func TestStateEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, stateful(map[string]int{"q": 16}))
	e.register("plain", 1)

	a := e.do("GET", "/api/v1/queues/q/state/a%2Fb", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"state": null, "version": 0}`, a.body)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": {"n": 1}, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"version": 1}`, a.body)
	a = e.do("GET", "/api/v1/queues/q/state/a/b", "")
	require.JSONEq(t, `{"state": {"n":1}, "version": 1}`, a.body)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": 2, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusConflict, a.status, a.body)
	_, field := a.errorBody(t)
	require.Equal(t, "version", field)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state_base64": "AP8=", "version": 1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/q/state/a%2Fb", "")
	require.JSONEq(t, `{"state_base64": "AP8=", "version": 2}`, a.body)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": "0123456789abcdefghij", "version": 2}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	_, field = a.errorBody(t)
	require.Equal(t, "state", field)

	for _, bad := range []string{`{"state": 1}`, `{"version": 2}`, `{"state": 1, "state_base64": "AA==", "version": 2}`, `[]`} {
		a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", bad, "Content-Type", "application/json")
		require.Equal(t, http.StatusBadRequest, a.status, bad)
	}

	e.enqueue(`[{"id": "a/b"}]`)
	look, a := e.get("a/b")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NotNil(t, look.State)
	require.Equal(t, int64(2), look.State.Version)
	require.Equal(t, []byte{0, 0xff}, look.State.Data)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": null, "version": 2}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"version": 3}`, a.body, "a delete keeps the version counting")
	a = e.do("GET", "/api/v1/queues/q/state/a%2Fb", "")
	require.JSONEq(t, `{"state": null, "version": 3, "deleted": true}`, a.body)
	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": 1, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusConflict, a.status, a.body)

	for _, q := range []string{"plain", "nope"} {
		a = e.do("GET", "/api/v1/queues/"+q+"/state/x", "")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		a = e.do("PUT", "/api/v1/queues/"+q+"/state/x", `{"state": 1, "version": 0}`, "Content-Type", "application/json")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
	}
}
