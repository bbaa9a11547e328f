package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/webtest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// t0 is the tests' starting time: a round number of unix seconds.
var t0 = webtest.T0

// env is one test's store, clock, server and queue "q" (3 shards).
type env struct {
	t     testing.TB
	ctx   context.Context
	clock *clock.Simulated
	store *redisstore.Store
	srv   *web.Server
	ts    *httptest.Server
	logs  *nodetest.LogBuffer
}

const testShards = 3

// option adjusts the API's configuration.
type option func(*web.Config)

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	return newEnvStore(t, nil, opts...)
}

// newEnvStore is newEnv with store adjusting the store's configuration.
func newEnvStore(t testing.TB, store func(*redisstore.Config), opts ...option) *env {
	t.Helper()
	wcfg := &web.Config{}
	for _, o := range opts {
		o(wcfg)
	}
	var wopts []webtest.Option
	if store != nil {
		wopts = append(wopts, webtest.WithStore(store))
	}
	ws := webtest.NewServer(t, wcfg, wopts...)
	e := &env{t: t, ctx: context.Background(), clock: ws.Clock, store: ws.Store, srv: ws.API, ts: ws.Server, logs: ws.Logs}
	ws.Register("q", testShards)
	return e
}

func (e *env) register(name string, shards int) {
	e.t.Helper()
	require.NoError(e.t, e.store.RegisterQueue(e.ctx, persistence.QueueSpec{Name: name, Shards: shards}))
}

// answer is an HTTP answer.
type answer struct {
	status int
	header http.Header
	body   string
	close  bool // Connection: close
}

// errorBody decodes an error answer.
func (a answer) errorBody(t testing.TB) (msg, field string) {
	t.Helper()
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(a.body), &v), a.body)
	require.NotEmpty(t, v["error"], a.body)
	if f, ok := v["field"]; ok {
		require.NotEmpty(t, f, "field is omitted, never empty: %s", a.body)
	}
	return v["error"], v["field"]
}

// do sends a request; headers are name, value pairs ("Host" sets the
// request's Host).
func (e *env) do(method, path, body string, headers ...string) answer {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, r)
	require.NoError(e.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.send(req)
}

// send sends a request whose answer must be JSON.
func (e *env) send(req *http.Request) answer {
	e.t.Helper()
	a := e.sendRaw(req)
	require.Equal(e.t, "application/json", a.header.Get("Content-Type"), "every answer is JSON: %s %s -> %d %s", req.Method, req.URL, a.status, a.body)
	return a
}

// doRaw sends a request whose answer need not be JSON (/metrics, the
// dashboard's files).
func (e *env) doRaw(method, path string, headers ...string) answer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, nil)
	require.NoError(e.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.sendRaw(req)
}

// sendRaw sends a request and checks it, and its answer, against the
// OpenAPI document (checkOpenAPI).
func (e *env) sendRaw(req *http.Request) answer {
	e.t.Helper()
	var reqBody []byte
	if req.GetBody != nil {
		rc, err := req.GetBody()
		require.NoError(e.t, err)
		reqBody, err = io.ReadAll(rc)
		require.NoError(e.t, err)
	} else if req.Body != nil {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		require.NoError(e.t, err)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	res, err := e.ts.Client().Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	a := answer{status: res.StatusCode, header: res.Header, body: string(b), close: res.Close}
	checkOpenAPI(e.t, req, reqBody, a)
	return a
}

// enqueue posts jobs to queue q and requires 202.
func (e *env) enqueue(body string, headers ...string) {
	e.t.Helper()
	a := e.do("POST", "/api/v1/queues/q/jobs", body, headers...)
	require.Equal(e.t, http.StatusAccepted, a.status, a.body)
}

// get looks an id up in queue q (escaping it) and requires 200.
func (e *env) get(id string) (apiv1.JobLookup, answer) {
	e.t.Helper()
	a := e.do("GET", "/api/v1/queues/q/jobs/"+escapeID(id), "")
	require.Equal(e.t, http.StatusOK, a.status, a.body)
	var l apiv1.JobLookup
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	require.NoError(e.t, dec.Decode(&l), a.body)
	return l, a
}

// escapeID escapes an id as one path segment: url.PathEscape escapes '/'
// and '%' but not the dot segments "." and "..".
func escapeID(id string) string {
	if id == "." || id == ".." {
		return strings.ReplaceAll(id, ".", "%2E")
	}
	return url.PathEscape(id)
}

// fetch makes the shard of id in queue q (testShards shards) hand its due
// jobs to owner "node-a", as a shard actor would; they are in flight until
// settled.
func (e *env) fetch(id string) (persistence.Lease, *persistence.Batch) {
	e.t.Helper()
	ref := persistence.ShardRef{Queue: "q", Shard: persistence.ShardOf(id, testShards)}
	lease, _, err := e.store.AcquireShard(e.ctx, ref, "node-a", time.Minute)
	require.NoError(e.t, err)
	res, err := e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Fetch: 100, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(e.t, err)
	require.NotNil(e.t, res.Batch)
	return lease, res.Batch
}

// kill sends id of queue q (due now) to the morgue with error "boom": fetch
// it and fail it with max_retry_count 0.
func (e *env) kill(id string) {
	e.t.Helper()
	lease, b := e.fetch(id)
	var failures []persistence.Failure
	for _, j := range b.Jobs {
		failures = append(failures, persistence.Failure{ID: j.ID, Error: "boom", RetryAt: e.clock.Now()})
	}
	res, err := e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Settle: 1, Failures: failures, NextSeq: 2, MaxRetryCount: 0})
	require.NoError(e.t, err)
	require.NotEmpty(e.t, res.Dead)
	require.NoError(e.t, e.store.ReleaseShard(e.ctx, lease))
}

// stats returns GET /api/v1/stats, which must answer 200.
func (e *env) stats() string {
	e.t.Helper()
	a := e.do("GET", "/api/v1/stats", "")
	require.Equal(e.t, http.StatusOK, a.status, a.body)
	return a.body
}

// newRequest is httptest.NewRequest addressed to localhost, a Host that a
// server without a token answers to (httptest's is example.com).
func newRequest(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "localhost"
	return req
}

// requireEmpty requires that nothing is queued in queue.
func (e *env) requireEmpty(queue string) {
	e.t.Helper()
	st, err := e.store.Stats(e.ctx, queue)
	require.NoError(e.t, err)
	require.Zero(e.t, st[0].Length, "nothing queued in %s", queue)
}
