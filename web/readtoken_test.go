package web_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// The read-only token opens every read (the API's GETs, /metrics, the
// dashboard) and nothing that changes state: those answer 403 and change
// nothing.
func TestReadToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) {
		c.Token = "full-tok"
		c.ReadToken = "read-tok"
		c.Metrics = promhttp.Handler()
		c.UI = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) })
	})
	full := []string{"Authorization", "Bearer full-tok"}
	read := []string{"Authorization", "Bearer read-tok"}
	e.enqueue(`[{"id": "a"}, {"id": "b"}]`, full...)

	access := func(h ...string) apiv1.Access {
		a := e.do("GET", "/api/v1/access", "", h...)
		require.Equal(t, http.StatusOK, a.status, a.body)
		var v apiv1.Access
		require.NoError(t, json.Unmarshal([]byte(a.body), &v))
		return v
	}
	require.Equal(t, apiv1.Access{Write: true, TokenRequired: true}, access(full...))
	require.Equal(t, apiv1.Access{Write: false, TokenRequired: true}, access(read...))
	require.Equal(t, http.StatusUnauthorized, e.do("GET", "/api/v1/access", "").status)

	reads := []string{"/api/v1/queues", "/api/v1/queues/q", "/api/v1/queues/q/jobs", "/api/v1/queues/q/jobs/a",
		"/api/v1/queues/q/processing", "/api/v1/queues/q/morgue", "/api/v1/stats", "/api/v1/cluster", "/api/v1/periodic"}
	for _, p := range reads {
		a := e.do("GET", p, "", read...)
		require.Equal(t, http.StatusOK, a.status, "%s: %s", p, a.body)
		a = e.do("GET", p, "", "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusUnauthorized, a.status, "%s: %s", p, a.body)
	}
	m := e.doRaw("GET", "/metrics", read...)
	require.Equal(t, http.StatusOK, m.status, m.body)
	require.Equal(t, http.StatusUnauthorized, e.doRaw("GET", "/metrics").status)
	require.Equal(t, http.StatusOK, e.doRaw("GET", "/").status, "the dashboard's files are static")
	require.Equal(t, http.StatusOK, e.doRaw("HEAD", "/api/v1/stats", read...).status)

	writes := [][3]string{
		{"POST", "/api/v1/queues/q/jobs", `[{"id": "c"}]`},
		{"DELETE", "/api/v1/queues/q/jobs/a", ""},
		{"POST", "/api/v1/queues/q/actions/perform_all_now", ""},
		{"POST", "/api/v1/queues/q/actions/kill_failed", ""},
		{"POST", "/api/v1/queues/q/actions/delete_failed", ""},
		{"POST", "/api/v1/queues/q/jobs/a/actions/perform_now", ""},
		{"POST", "/api/v1/queues/q/jobs/a/actions/kill", ""},
		{"POST", "/api/v1/queues/q/morgue/requeue", `{"all": true}`},
		{"POST", "/api/v1/queues/q/morgue/delete", `{"all": true}`},
		{"POST", "/api/v1/queues/q/pause", ""},
		{"POST", "/api/v1/queues/q/resume", ""},
		{"POST", "/api/v1/queues/q/reshard", `{"shards": 5}`},
	}
	for _, w := range writes {
		a := e.do(w[0], w[1], w[2], append([]string{"Content-Type", "application/json"}, read...)...)
		require.Equal(t, http.StatusForbidden, a.status, "%s %s: %s", w[0], w[1], a.body)
		msg, _ := a.errorBody(t)
		require.Contains(t, msg, "read-only access")
		require.NotContains(t, a.body, "read-tok")
	}
	for _, id := range []string{"a", "b"} {
		info, err := e.store.GetJob(e.ctx, "q", id)
		require.NoError(t, err)
		require.NotNil(t, info.Queued, "the read-only token changed %s", id)
	}
	shape, err := e.store.Shape(e.ctx, "q")
	require.NoError(t, err)
	require.False(t, shape.Resharding(), "the read-only token started a reshard")
	_, err = e.store.GetJob(e.ctx, "q", "c")
	require.ErrorIs(t, err, persistence.ErrNotFound, "the read-only token enqueued")
	ctl, err := e.store.Controls(e.ctx, "q")
	require.NoError(t, err)
	require.False(t, ctl[0].Paused, "the read-only token paused the queue")

	// The full token still does everything.
	a := e.do("DELETE", "/api/v1/queues/q/jobs/a", "", full...)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NotContains(t, e.logs.String(), "read-tok")
}

func TestReadTokenConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := web.New(&web.Config{Store: e.store, ReadToken: "r"})
	require.ErrorContains(t, err, "ReadToken needs Token")
	_, err = web.New(&web.Config{Store: e.store, Token: "same", ReadToken: "same"})
	require.ErrorContains(t, err, "must differ")

	// Without any token, everything is allowed, and the access says so.
	a := e.do("GET", "/api/v1/access", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"write": true, "token_required": false}`, a.body)
}
