package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/ui"
)

// Under a base path the API, /metrics and the dashboard answer below it,
// nothing else does (but the probes, also at the root), and the dashboard's
// shell names its files below it.
func TestBasePath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) {
		c.BasePath = "/tools/orderly"
		c.UI = ui.HandlerAt("/tools/orderly")
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("orderly_up 1\n")) })
	})
	a := e.do("POST", "/tools/orderly/api/v1/queues/q/jobs", `[{"id": "a/b"}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)

	a = e.do("GET", "/tools/orderly/api/v1/queues/q", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"length":1`)
	a = e.do("POST", "/tools/orderly/api/v1/queues/q/jobs", `[{"id": "c"}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	// Escaped ids keep their escapes below the base path.
	a = e.do("GET", "/tools/orderly/api/v1/queues/q/jobs/a%2Fb", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"id":"a/b"`)
	a = e.doRaw("GET", "/tools/orderly/metrics")
	require.Equal(t, "orderly_up 1\n", a.body)
	for _, p := range []string{"/healthz", "/readyz", "/tools/orderly/healthz", "/tools/orderly/readyz"} {
		a = e.do("GET", p, "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", p, a.body)
	}

	// Outside the base path: 404, JSON, saying where the server answers.
	for _, p := range []string{"/api/v1/queues/q", "/", "/metrics", "/assets/app.js", "/tools/orderlyx/api/v1/queues", "/tools"} {
		a = e.do("GET", p, "")
		require.Equal(t, http.StatusNotFound, a.status, "%s: %s", p, a.body)
		msg, _ := a.errorBody(t)
		require.Contains(t, msg, "this server answers under /tools/orderly/", p)
	}

	// The dashboard: its shell at the base path and every route below it,
	// its files below it.
	for _, p := range []string{"/tools/orderly", "/tools/orderly/", "/tools/orderly/queues/q/morgue"} {
		a = e.doRaw("GET", p)
		require.Equal(t, http.StatusOK, a.status, p)
		require.Contains(t, a.body, `<script type="module" src="/tools/orderly/assets/app.js">`, p)
		require.Contains(t, a.body, `href="/tools/orderly/assets/app.css"`, p)
		require.NotContains(t, a.body, `"/assets/`, p)
	}
	a = e.doRaw("GET", "/tools/orderly/assets/app.js")
	require.Equal(t, http.StatusOK, a.status)
	require.True(t, strings.HasPrefix(a.body, "//"), "the script itself")

	// A bad base path is refused.
	for _, p := range []string{"orderly", "/orderly/", "/a b"} {
		_, err := web.New(&web.Config{Store: e.store, BasePath: p})
		require.ErrorContains(t, err, "BasePath", p)
	}
}
