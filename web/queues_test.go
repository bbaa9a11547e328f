package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

func TestQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("alpha", 2)

	// q: ok1 processed, dead in the morgue, retry failed once (due in a
	// minute), busy in flight, old overdue by 5.5 s, fresh due in 30 s.
	e.enqueue(`[{"id": "ok1"}]`)
	lease, _ := e.fetch("ok1")
	_, err := e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2})
	require.NoError(t, err)
	require.NoError(t, e.store.ReleaseShard(e.ctx, lease))
	e.enqueue(`[{"id": "dead"}]`)
	e.kill("dead")
	e.enqueue(`[{"id": "retry"}]`)
	e.failDue(func(string) time.Time { return e.clock.Now().Add(time.Minute) })
	e.enqueue(`[{"id": "busy"}]`)
	e.fetch("busy")
	e.enqueue(`[{"id": "old", "perform_at": 1699999994.5}, {"id": "fresh", "perform_in": 30}]`)

	const q = `{"name":"q","shards":3,"length":3,"fresh":2,"retries":1,"morgue_length":1,"lag":5.5,"busy":1,"processed":1,"failed":2,"snoozed":0,"discarded":0,"oldest_due":1699999994.5,"paused":false}`
	a := e.do("GET", "/api/v1/queues", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"queues":[`+
		`{"name":"alpha","shards":2,"length":0,"fresh":0,"retries":0,"morgue_length":0,"lag":0,"busy":0,"processed":0,"failed":0,"snoozed":0,"discarded":0,"oldest_due":null,"paused":false},`+
		q+`]}`+"\n", a.body)
	a = e.do("GET", "/api/v1/queues/q", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, q+"\n", a.body)

	// Not yet due: no lag, but oldest_due tells when.
	e.register("later", 1)
	a = e.do("POST", "/api/v1/queues/later/jobs", `[{"id": "x", "perform_in": 60}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/later", "")
	require.Equal(t, `{"name":"later","shards":1,"length":1,"fresh":1,"retries":0,"morgue_length":0,"lag":0,"busy":0,"processed":0,"failed":0,"snoozed":0,"discarded":0,"oldest_due":1700000060,"paused":false}`+"\n", a.body)

	for _, c := range []struct {
		path, field string
		status      int
	}{
		{"/api/v1/queues/nope", "queue", http.StatusNotFound},
		{"/api/v1/queues/" + strings.Repeat("q", 129), "queue", http.StatusBadRequest},
		{"/api/v1/queues/-q", "queue", http.StatusBadRequest},
		{"/api/v1/queues/q%3Ax", "queue", http.StatusBadRequest},
		{"/api/v1/queues/%7Bq%7D", "queue", http.StatusBadRequest},
		{"/api/v1/queues/%F0%9F%98%80", "queue", http.StatusBadRequest},
		{"/api/v1/queues/q?verbose=1", "verbose", http.StatusBadRequest},
		{"/api/v1/queues?name=q", "name", http.StatusBadRequest},
	} {
		a := e.do("GET", c.path, "")
		require.Equal(t, c.status, a.status, "%s: %s", c.path, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.path)
	}
	a = e.do("GET", "/api/v1/queues/nope", "")
	require.Equal(t, `{"error":"unknown queue \"nope\"","field":"queue"}`+"\n", a.body)
}

func TestQueuesEmptyStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.Store = emptyStore{c.Store} })
	a := e.do("GET", "/api/v1/queues", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"queues":[]}`+"\n", a.body)
}

// emptyStore is a store without queues.
type emptyStore struct{ persistence.Store }

func (emptyStore) Queues(ctx context.Context) ([]persistence.QueueSpec, error) { return nil, nil }

// metricsText stands in for the node's Prometheus handler.
var metricsText = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte("# TYPE orderly_up gauge\norderly_up 1\n"))
})

// dashboard stands in for the dashboard's static files.
var dashboard = http.FileServerFS(fstest.MapFS{
	"index.html":    {Data: []byte("<!doctype html><title>Orderly</title>")},
	"assets/app.js": {Data: []byte("fetch('/api/v1/queues')")},
})

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("GET", "/metrics", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Equal(t, `{"error":"no metrics: this server has no Prometheus handler"}`+"\n", a.body)

	for _, publicReads := range []bool{false, true} {
		e := newEnv(t, func(c *web.Config) {
			c.Metrics = metricsText
			c.Token = "s3cret"
			c.PublicReads = publicReads
		})
		a := e.doRaw("GET", "/metrics", "Authorization", "Bearer s3cret")
		require.Equal(t, http.StatusOK, a.status, a.body)
		require.Equal(t, "# TYPE orderly_up gauge\norderly_up 1\n", a.body)
		require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", a.header.Get("Content-Type"))
		a = e.doRaw("GET", "/metrics")
		if publicReads {
			require.Equal(t, http.StatusOK, a.status, a.body)
		} else {
			require.Equal(t, http.StatusUnauthorized, a.status, a.body)
			require.Equal(t, "application/json", a.header.Get("Content-Type"))
		}
		a = e.do("POST", "/metrics", "", "Authorization", "Bearer s3cret")
		require.Equal(t, http.StatusMethodNotAllowed, a.status, a.body)
	}
}

func TestUI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) {
		c.UI = dashboard
		c.Metrics = metricsText
		c.Token = "s3cret"
	})
	auth := []string{"Authorization", "Bearer s3cret"}

	// The dashboard's files need no token.
	a := e.doRaw("GET", "/")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, "<!doctype html><title>Orderly</title>", a.body)
	require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"))
	a = e.doRaw("GET", "/assets/app.js")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, "fetch(")
	a = e.doRaw("HEAD", "/assets/app.js")
	require.Equal(t, http.StatusOK, a.status)
	a = e.doRaw("GET", "/assets/missing.js")
	require.Equal(t, http.StatusNotFound, a.status, "the dashboard answers its own 404s")

	// Everything else needs it as before.
	for _, p := range []string{"/api/v1/queues", "/api/v1/stats", "/api/v1/nope", "/api", "/metrics"} {
		a := e.do("GET", p, "")
		require.Equal(t, http.StatusUnauthorized, a.status, "%s: %s", p, a.body)
	}
	a = e.do("GET", "/api/v1/queues", "", auth...)
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("GET", "/api/v1/nope", "", auth...)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Equal(t, `{"error":"no endpoint GET /api/v1/nope"}`+"\n", a.body)
	a = e.doRaw("GET", "/metrics", auth...)
	require.Equal(t, http.StatusOK, a.status, a.body)
	for _, probe := range []string{"/healthz", "/readyz"} {
		a := e.do("GET", probe, "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", probe, a.body)
	}

	// The dashboard's paths are read only.
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		a := e.do(m, "/", "")
		require.Equal(t, http.StatusMethodNotAllowed, a.status, a.body)
		require.Equal(t, "GET, HEAD", a.header.Get("Allow"))
	}
	// A path that is not canonical is not the dashboard's.
	req, err := http.NewRequest("GET", e.ts.URL, nil)
	require.NoError(t, err)
	req.URL.Opaque = "/assets/../api/v1/stats"
	a = e.send(req)
	require.Equal(t, http.StatusUnauthorized, a.status, a.body)
	req.Header.Set("Authorization", "Bearer s3cret")
	a = e.send(req)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Contains(t, a.body, "not canonical")
}

func TestTokenNewEndpoints(t *testing.T) {
	t.Parallel()
	for _, publicReads := range []bool{false, true} {
		e := newEnv(t, func(c *web.Config) {
			c.Token = "s3cret"
			c.PublicReads = publicReads
		})
		reads := []string{"/api/v1/queues", "/api/v1/queues/q", "/api/v1/queues/q/jobs", "/api/v1/queues/q/processing"}
		for _, p := range reads {
			a := e.do("GET", p, "")
			if publicReads {
				require.Equal(t, http.StatusOK, a.status, "%s: %s", p, a.body)
			} else {
				require.Equal(t, http.StatusUnauthorized, a.status, "%s: %s", p, a.body)
			}
			a = e.do("GET", p, "", "Authorization", "Bearer s3cret")
			require.Equal(t, http.StatusOK, a.status, "%s: %s", p, a.body)
		}
		e.enqueue(`[{"id": "a"}]`, "Authorization", "Bearer s3cret")
		writes := [][3]string{
			{"DELETE", "/api/v1/queues/q/jobs/a", ""},
			{"POST", "/api/v1/queues/q/actions/perform_all_now", ""},
			{"POST", "/api/v1/queues/q/actions/kill_failed", ""},
			{"POST", "/api/v1/queues/q/actions/delete_failed", ""},
			{"POST", "/api/v1/queues/q/morgue/delete", `{"all": true}`},
		}
		for _, w := range writes {
			for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic s3cret"}} {
				a := e.do(w[0], w[1], w[2], h...)
				require.Equal(t, http.StatusUnauthorized, a.status, "%s %s: %s", w[0], w[1], a.body)
				require.NotContains(t, a.body, "s3cret")
			}
		}
		info, err := e.store.GetJob(e.ctx, "q", "a")
		require.NoError(t, err)
		require.NotNil(t, info.Queued, "an unauthorized request changes nothing (publicReads %v)", publicReads)
		for _, w := range writes {
			a := e.do(w[0], w[1], w[2], "Authorization", "Bearer s3cret", "Sec-Fetch-Site", "cross-site")
			require.Equal(t, http.StatusForbidden, a.status, "%s %s: %s", w[0], w[1], a.body)
			a = e.do(w[0], w[1], w[2], "Authorization", "Bearer s3cret")
			require.Equal(t, http.StatusOK, a.status, "%s %s: %s", w[0], w[1], a.body)
		}
		require.NotContains(t, e.logs.String(), "s3cret")
	}
}

func TestUIPanics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) {
		c.UI = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom in the dashboard") })
	})
	a := e.do("GET", "/", "")
	require.Equal(t, http.StatusInternalServerError, a.status, a.body)
	require.Equal(t, `{"error":"internal error; the server log has the details"}`+"\n", a.body)
	require.Contains(t, e.logs.String(), "boom in the dashboard")
}

// The queue answers carry the max_concurrency and rate_limit the node is
// configured with (docs/contract.md §9), and leave them out for a queue
// without limits.
func TestQueueLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) {
		c.QueueLimits = map[string]apiv1.QueueLimits{
			"q":     {MaxConcurrency: 4, RateLimit: &apiv1.RateLimit{PerSecond: 2.5, Burst: 3}},
			"rated": {RateLimit: &apiv1.RateLimit{PerSecond: 10, Burst: 20}},
		}
	})
	e.register("rated", 1)
	e.register("free", 1)
	a := e.do("GET", "/api/v1/queues/q", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"paused":false,"max_concurrency":4,"rate_limit":{"per_second":2.5,"burst":3}}`)
	var all apiv1.Queues
	a = e.do("GET", "/api/v1/queues", "")
	require.NoError(t, json.Unmarshal([]byte(a.body), &all))
	byName := map[string]apiv1.Queue{}
	for _, q := range all.Queues {
		byName[q.Name] = q
	}
	require.Equal(t, 4, byName["q"].MaxConcurrency)
	require.Equal(t, &apiv1.RateLimit{PerSecond: 10, Burst: 20}, byName["rated"].RateLimit)
	require.Zero(t, byName["rated"].MaxConcurrency)
	a = e.do("GET", "/api/v1/queues/free", "")
	require.NotContains(t, a.body, "max_concurrency")
	require.NotContains(t, a.body, "rate_limit")
}
