package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

func TestStatsShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// No queue but the env's "q", which is empty.
	require.Equal(t, `{"total":{"length":0,"morgue_length":0,"lag":0},"by_worker":{"q":{"length":0,"morgue_length":0,"lag":0}}}`+"\n", e.stats())

	e.register("alpha", 2)
	e.register("beta", 1)
	a := e.do("POST", "/api/v1/queues/alpha/jobs", `[{"id": "a1", "perform_at": 1699999994.5}, {"id": "a2"}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	e.enqueue(`[{"id": "dead"}]`)
	e.kill("dead") // q: one morgue entry, nothing queued
	a = e.do("POST", "/api/v1/queues/beta/jobs", `[{"id": "b1", "perform_in": 60}]`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)

	// Key order is Lowkiq's; the total lag is the maximum, the rest sums;
	// a job not yet due adds no lag.
	require.Equal(t, `{"total":{"length":3,"morgue_length":1,"lag":5.5},"by_worker":{`+
		`"alpha":{"length":2,"morgue_length":0,"lag":5.5},`+
		`"beta":{"length":1,"morgue_length":0,"lag":0},`+
		`"q":{"length":0,"morgue_length":1,"lag":0}}}`+"\n", e.stats())
}

func TestStatsWithoutQueues(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	srv, err := web.New(&web.Config{Store: store})
	require.NoError(t, err)
	req, err := http.NewRequest("GET", "/api/v1/stats", nil)
	require.NoError(t, err)
	rec := serveChecked(t, srv, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `{"total":{"length":0,"morgue_length":0,"lag":0},"by_worker":{}}`+"\n", rec.Body.String())
}

func TestLookup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	a := e.do("GET", "/api/v1/queues/q/jobs/nope", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	msg, field := a.errorBody(t)
	require.Equal(t, `job "nope" not found in queue "q"`, msg)
	require.Empty(t, field)

	a = e.do("GET", "/api/v1/queues/nope/jobs/x", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Equal(t, `{"error":"unknown queue \"nope\"","field":"queue"}`+"\n", a.body)

	a = e.do("GET", "/api/v1/queues/q/jobs/", "")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	_, field = a.errorBody(t)
	require.Equal(t, "id", field)

	a = e.do("GET", "/api/v1/queues/q/jobs/"+strings.Repeat("x", 513), "")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/q/jobs/a%FFb", "")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	require.Contains(t, a.body, "UTF-8")

	// Queued only.
	e.enqueue(`[{"id": "j", "payload": {"v": 1}, "score": 1}]`)
	l, raw := e.get("j")
	require.False(t, l.InFlight)
	require.Nil(t, l.Processing)
	require.Contains(t, raw.body, `"in_flight":false,"queued":{"perform_at":1700000000,"retry_count":-1,"error":"","payloads":[{"payload":{"v":1},"score":1}],"payload_count":1},"processing":null}`)

	// In flight only.
	e.clock.Advance(500 * time.Millisecond)
	lease, _ := e.fetch("j")
	l, raw = e.get("j")
	require.True(t, l.InFlight)
	require.Nil(t, l.Queued)
	require.Equal(t, &apiv1.InFlightJob{
		Job: apiv1.Job{
			PerformAt: 1700000000, RetryCount: -1,
			Payloads:     []wire.Payload{{Data: []byte(`{"v":1}`), Score: 1}},
			PayloadCount: 1,
		},
		Owner: "node-a", Epoch: lease.Epoch, Seq: 1, FetchedAt: 1700000000.5,
	}, l.Processing)
	require.Contains(t, raw.body, `"in_flight":true,"queued":null,"processing":{"perform_at":1700000000,`)

	// In flight and queued: new payloads arrived meanwhile.
	e.enqueue(`[{"id": "j", "payload": {"v": 2}, "score": 2}]`)
	l, _ = e.get("j")
	require.True(t, l.InFlight)
	require.NotNil(t, l.Processing)
	require.NotNil(t, l.Queued)
	require.Equal(t, []wire.Payload{{Data: []byte(`{"v":2}`), Score: 2}}, l.Queued.Payloads)
	require.Equal(t, []wire.Payload{{Data: []byte(`{"v":1}`), Score: 1}}, l.Processing.Payloads)
}

// An id that is only in the morgue is found, with its entry; 404 only
// when nothing of the id is known.
func TestLookupMorgueOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "m", "payload": {"v": 1}, "score": 1}]`)
	a := e.do("POST", "/api/v1/queues/q/jobs/m/actions/kill", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	l, raw := e.get("m")
	require.Nil(t, l.Queued)
	require.Nil(t, l.Processing)
	require.NotNil(t, l.Morgue)
	first := 1700000000.0
	require.Equal(t, &apiv1.MorgueEntry{ID: "m", UpdatedAt: 1700000000, FirstAt: &first, Error: "killed",
		Payloads: []wire.Payload{{Data: []byte(`{"v":1}`), Score: 1}}, PayloadCount: 1}, l.Morgue)
	require.Contains(t, raw.body, `"queued":null,"processing":null,"morgue":{"id":"m","updated_at":1700000000,"first_at":1700000000,"error":"killed",`)

	// Queued again: both show.
	e.enqueue(`[{"id": "m", "payload": {"v": 2}, "score": 2}]`)
	l, _ = e.get("m")
	require.NotNil(t, l.Queued)
	require.NotNil(t, l.Morgue)

	// A job without a morgue entry answers no morgue member.
	e.enqueue(`[{"id": "n"}]`)
	_, raw = e.get("n")
	require.NotContains(t, raw.body, `"morgue"`)

	a = e.do("POST", "/api/v1/queues/q/morgue/delete", `{"ids": ["m"]}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("DELETE", "/api/v1/queues/q/jobs/m", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/q/jobs/m", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
}

func TestLookupIDsInPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := []string{"a/b", "100%", "%41", "a%2Fb", "ünï/cödé:{x}", "sp ace?q=1#f", "..", ".", "a/", "/a", "+&=;,"}
	var jobs []string
	for _, id := range ids {
		b, err := json.Marshal(id)
		require.NoError(t, err)
		jobs = append(jobs, `{"id": `+string(b)+`, "payload": `+string(b)+`}`)
	}
	e.enqueue("[" + strings.Join(jobs, ",") + "]")
	for _, id := range ids {
		l, _ := e.get(id) // escaped with url.PathEscape: '/' as %2F, '%' as %25
		require.Equal(t, id, l.ID)
		want, _ := json.Marshal(id)
		require.Equal(t, want, l.Queued.Payloads[0].Data, id)
	}
	// '/' need not be escaped.
	a := e.do("GET", "/api/v1/queues/q/jobs/a/b", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"id":"a/b"`)
	a = e.do("GET", "/api/v1/queues/q/jobs/ünï/cödé:%7Bx%7D", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	// Dot segments are escaped (%2E); unescaped, the path is not canonical
	// and the answer says so rather than redirecting to another id.
	a = e.do("GET", "/api/v1/queues/q/jobs/%2E%2E", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"id":".."`)
	for _, p := range []string{"/api/v1/queues/q/jobs/x/../a/b", "/api/v1/queues/q/jobs/a//b", "/api/v1//stats"} {
		req, err := http.NewRequest("GET", e.ts.URL, nil)
		require.NoError(t, err)
		req.URL.Opaque = p // sent as is
		a = e.send(req)
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		require.Contains(t, a.body, "not canonical", p)
	}
}

func TestMorgue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// m2 dies at t0, m1 at t0+1s, m3 at t0+2s.
	for i, j := range [][2]string{{"m2", `"payload_base64": "AP8="`}, {"m1", `"payload": {"n": 1}`}, {"m3", `"payload": {"n": 2}`}} {
		e.enqueue(fmt.Sprintf(`[{"id": %q, %s, "score": %d}]`, j[0], j[1], i))
		e.kill(j[0])
		e.clock.Advance(time.Second)
	}
	a := e.do("GET", "/api/v1/queues/q/morgue?order=id&limit=2", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	var page apiv1.MorguePage
	require.NoError(t, json.Unmarshal([]byte(a.body), &page))
	require.Len(t, page.Entries, 2)
	require.Equal(t, "m1", page.Entries[0].ID)
	require.Equal(t, "m2", page.Entries[1].ID)
	require.NotEmpty(t, page.Next)
	require.Contains(t, a.body, `{"entries":[{"id":"m1","updated_at":1700000001,"first_at":1700000001,"error":"boom","payloads":[{"payload":{"n":1},"score":1}],"payload_count":1},`)

	a = e.do("GET", "/api/v1/queues/q/morgue?order=id&limit=2&cursor="+url.QueryEscape(page.Next), "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"entries":[{"id":"m3","updated_at":1700000002,"first_at":1700000002,"error":"boom","payloads":[{"payload":{"n":2},"score":2}],"payload_count":1}],"next":""}`+"\n", a.body)

	a = e.do("GET", "/api/v1/queues/q/morgue?order=updated_at&rev=true&min=1700000001", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NoError(t, json.Unmarshal([]byte(a.body), &page))
	require.Len(t, page.Entries, 2)
	require.Equal(t, "m3", page.Entries[0].ID)
	require.Equal(t, "m1", page.Entries[1].ID)

	a = e.do("POST", "/api/v1/queues/q/morgue/requeue", `{"ids": ["m1", "unknown", "m1"]}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"requeued":1}`+"\n", a.body)
	l, _ := e.get("m1")
	require.Equal(t, []wire.Payload{{Data: []byte(`{"n":1}`), Score: 1}}, l.Queued.Payloads)
	require.Equal(t, -1, l.Queued.RetryCount)
	require.Equal(t, persistence.UnixSeconds(e.clock.Now()), l.Queued.PerformAt)

	a = e.do("POST", "/api/v1/queues/q/morgue/requeue", `{"ids": []}`)
	require.Equal(t, `{"requeued":0}`+"\n", a.body)
	a = e.do("POST", "/api/v1/queues/q/morgue/requeue", `{"all": true}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"requeued":2}`+"\n", a.body)
	require.Contains(t, e.stats(), `"total":{"length":3,"morgue_length":0,`)
	a = e.do("GET", "/api/v1/queues/q/jobs/m2", "")
	require.Contains(t, a.body, `"payloads":[{"payload_base64":"AP8=","score":0}]`)
	a = e.do("GET", "/api/v1/queues/q/morgue", "")
	require.Equal(t, `{"entries":[],"next":""}`+"\n", a.body)
}

func TestMorgueListBadParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for query, field := range map[string]string{
		"order=score":                       "order",
		"order=perform_at":                  "order",
		"limit=abc":                         "limit",
		"limit=-1":                          "limit",
		"limit=1001":                        "limit",
		"payloads=x":                        "payloads",
		"order=updated_at&min=abc":          "min",
		"order=updated_at&max=NaN":          "max",
		"order=updated_at&min=5&max=1":      "min",
		"cursor=garbage!":                   "cursor",
		"rev=maybe":                         "rev",
		"rev=yes":                           "rev",
		"limit=1&limit=2":                   "limit",
		"prioritty=1":                       "prioritty",
		"order=id&cursor=" + idCursor(t, e): "cursor", // a cursor of another direction
	} {
		a := e.do("GET", "/api/v1/queues/q/morgue?"+query, "")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", query, a.body)
		msg, f := a.errorBody(t)
		require.Equal(t, field, f, query)
		require.True(t, strings.HasPrefix(msg, field+": "), msg)
	}
	a := e.do("GET", "/api/v1/queues/q/morgue?limit=%zz", "")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	require.Contains(t, a.body, "malformed query string")

	a = e.do("GET", "/api/v1/queues/nope/morgue", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	for _, ok := range []string{"rev=1", "rev=0", "rev=TRUE", "rev=false", "rev=", "order=updated_at&min=-inf&max=%2Binf", "limit=1000&payloads=1"} {
		a := e.do("GET", "/api/v1/queues/q/morgue?"+ok, "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", ok, a.body)
	}
}

// idCursor returns a cursor of a reversed listing by id.
func idCursor(t *testing.T, e *env) string {
	t.Helper()
	for _, id := range []string{"c1", "c2"} {
		e.enqueue(`[{"id": "` + id + `"}]`)
		e.kill(id)
	}
	page, err := e.store.ListMorgue(e.ctx, "q", persistence.ListOptions{Order: persistence.OrderID, Rev: true, Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)
	return url.QueryEscape(page.Next)
}

func TestRequeueBodyErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		body, field, msg string
		status           int
	}{
		{body: `{}`, field: "ids", msg: `ids: required: give "ids": [...] or "all": true`},
		{body: `{"all": false}`, field: "all", msg: "all: must be true"},
		{body: `{"all": "yes"}`, field: "all", msg: "must be true, got a string"},
		{body: `{"all": null}`, field: "all", msg: "must be true, got null"},
		{body: `{"ids": "a"}`, field: "ids", msg: "must be an array of ids, got a string"},
		{body: `{"ids": null}`, field: "ids", msg: "got null"},
		{body: `{"ids": ["a", 1]}`, field: "ids[1]", msg: "ids[1]: must be a string, got a number"},
		{body: `{"ids": ["a", ""]}`, field: "ids[1]", msg: "ids[1]: must not be empty"},
		{body: `{"ids": ["` + strings.Repeat("x", 513) + `"]}`, field: "ids[0]", msg: "longer than 512 bytes"},
		{body: `{"ids": ["\udfff"]}`, field: "ids[0]", msg: "not valid UTF-8"},
		{body: `{"ids": ["a"], "all": true}`, field: "all", msg: `give "ids" or "all", not both`},
		{body: `{"all": true, "all": true}`, field: "all", msg: "given more than once"},
		{body: `{"idz": ["a"]}`, field: "idz", msg: "idz: unknown field"},
		{body: `["a"]`, msg: `the body must be {"ids": [...]} or {"all": true}, got an array`},
		{body: `{"ids": [}`, msg: "malformed JSON at byte 10"},
		{body: ``, msg: `the request body is empty: send {"ids": [...]} or {"all": true}`},
	} {
		a := e.do("POST", "/api/v1/queues/q/morgue/requeue", c.body)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", c.body, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.body)
		require.Contains(t, msg, c.msg, c.body)
	}
	a := e.do("POST", "/api/v1/queues/nope/morgue/requeue", `{"all": true}`)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	a = e.do("POST", "/api/v1/queues/q/morgue/requeue", `{"all": true}`, "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnsupportedMediaType, a.status, a.body)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	var notReady atomic.Bool
	e := newEnv(t, func(c *web.Config) {
		c.Ready = func(ctx context.Context) error {
			if notReady.Load() {
				return errors.New("serving 3 of 5 shards")
			}
			return nil
		}
	})
	a := e.do("GET", "/healthz", "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, `{"status":"ok"}`+"\n", a.body)
	a = e.do("GET", "/readyz", "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, `{"status":"ready"}`+"\n", a.body)

	notReady.Store(true)
	a = e.do("GET", "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, `{"error":"serving 3 of 5 shards"}`+"\n", a.body)

	a = e.do("HEAD", "/healthz", "")
	require.Equal(t, http.StatusOK, a.status)
	require.Empty(t, a.body)
}

// downStore is a store on a port where no Redis listens.
func downStore(t *testing.T) *redisstore.Store {
	t.Helper()
	port, err := redistest.FreePort()
	require.NoError(t, err)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, &redisstore.Config{Prefix: "down"})
	require.NoError(t, err)
	return s
}

func TestStoreUnreachable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.Store = downStore(t) })
	for _, r := range [][2]string{
		{"GET", "/api/v1/stats"},
		{"GET", "/api/v1/queues/q/jobs/a"},
		{"GET", "/api/v1/queues/q/morgue"},
		{"GET", "/api/v1/queues"},
		{"GET", "/api/v1/queues/q"},
		{"GET", "/api/v1/queues/q/jobs"},
		{"GET", "/api/v1/queues/q/processing"},
		{"DELETE", "/api/v1/queues/q/jobs/a"},
		{"POST", "/api/v1/queues/q/actions/kill_failed"},
		{"POST", "/api/v1/queues/q/jobs/a/actions/kill"},
		{"POST", "/api/v1/queues/q/morgue/delete"},
	} {
		body := ""
		if strings.HasSuffix(r[1], "/delete") {
			body = `{"all": true}`
		}
		a := e.do(r[0], r[1], body)
		require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
		require.Equal(t, `{"error":"store unavailable; retry later"}`+"\n", a.body)
		require.Equal(t, "1", a.header.Get("Retry-After"))
	}
	a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`)
	require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
	a = e.do("GET", "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
	require.Equal(t, `{"error":"store unreachable"}`+"\n", a.body)
	a = e.do("GET", "/healthz", "")
	require.Equal(t, http.StatusOK, a.status, "liveness does not depend on the store")
	require.Contains(t, e.logs.String(), `"queue":"q"`)
	require.Contains(t, e.logs.String(), "connection refused")
}

// brokenStore fails or panics in the ways a buggy store could.
type brokenStore struct {
	persistence.Store
}

func (brokenStore) Queues(context.Context) ([]persistence.QueueSpec, error) {
	return nil, errors.New("redisstore: list queues: WRONGTYPE secret-internal-detail")
}

func (brokenStore) GetJob(context.Context, string, string) (persistence.JobInfo, error) {
	panic("boom in GetJob")
}

func TestInternalErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.Store = brokenStore{} })
	a := e.do("GET", "/api/v1/stats", "")
	require.Equal(t, http.StatusInternalServerError, a.status, a.body)
	require.NotContains(t, a.body, "secret")
	require.Equal(t, `{"error":"internal error; the server log has the details"}`+"\n", a.body)
	require.Contains(t, e.logs.String(), "secret-internal-detail")

	a = e.do("GET", "/api/v1/queues/q/jobs/some%2Fid", "")
	require.Equal(t, http.StatusInternalServerError, a.status, a.body)
	require.NotContains(t, a.body, "boom")
	logs := e.logs.String()
	require.Contains(t, logs, "boom in GetJob")
	require.Contains(t, logs, `"job_id":"some/id"`)
	require.Contains(t, logs, `"queue":"q"`)
}

func TestRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		method, path, allow string
	}{
		{"POST", "/api/v1/stats", "GET, HEAD"},
		{"DELETE", "/api/v1/stats", "GET, HEAD"},
		{"PUT", "/api/v1/queues/q/jobs/x", "GET, HEAD, POST, DELETE"},
		{"GET", "/api/v1/queues/q/morgue/requeue", "POST"},
		{"GET", "/api/v1/queues/q/morgue/delete", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"POST", "/api/v1/queues", "GET, HEAD"},
		{"DELETE", "/api/v1/queues/q", "GET, HEAD"},
		{"DELETE", "/api/v1/queues/q/jobs", "GET, HEAD, POST"},
		{"PATCH", "/api/v1/queues/q/jobs/a/b", "GET, HEAD, POST, DELETE"},
		{"POST", "/api/v1/queues/q/processing", "GET, HEAD"},
		{"GET", "/api/v1/queues/q/actions/kill_failed", "POST"},
		{"DELETE", "/api/v1/queues/q/actions/nope", "POST"},
		{"PUT", "/api/v1/queues/q/morgue", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
	} {
		a := e.do(c.method, c.path, "")
		require.Equal(t, http.StatusMethodNotAllowed, a.status, "%s %s: %s", c.method, c.path, a.body)
		require.Equal(t, c.allow, a.header.Get("Allow"), c.path)
		msg, field := a.errorBody(t)
		require.Empty(t, field)
		require.Contains(t, msg, "method "+c.method+" is not allowed")
	}
	for _, p := range []string{"/", "/index.html", "/api/v1/nope", "/api/v1/stats/", "/api/v1/queues/q/nope", "/api/v1/queues/", "/api/v1/queues/q/actions/", "/api/v2/stats", "/metrics/x"} {
		a := e.do("GET", p, "")
		require.Equal(t, http.StatusNotFound, a.status, "%s: %s", p, a.body)
		require.Equal(t, fmt.Sprintf(`{"error":"no endpoint GET %s"}`+"\n", p), a.body)
	}
	// Endpoints without parameters take none.
	for _, p := range []string{"/api/v1/stats?x=1", "/api/v1/cluster?x=1", "/api/v1/queues/q/jobs/a?x=1"} {
		a := e.do("GET", p, "")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", p, a.body)
		require.Equal(t, `{"error":"x: unknown parameter: this endpoint takes none","field":"x"}`+"\n", a.body)
	}
	a := e.do("POST", "/api/v1/queues/q/jobs?x=1", `[{"id": "a"}]`)
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	a = e.do("GET", "/readyz", "")
	require.Equal(t, http.StatusOK, a.status, "without Config.Ready, ready when the store answers: %s", a.body)
	a = e.do("GET", "/api/v1/stats", "")
	require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", a.header.Get("Cache-Control"))
}

func TestToken(t *testing.T) {
	t.Parallel()
	for _, publicReads := range []bool{false, true} {
		e := newEnv(t, func(c *web.Config) {
			c.Token = "s3cret"
			c.PublicReads = publicReads
		})
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`)
		require.Equal(t, http.StatusUnauthorized, a.status, a.body)
		require.Equal(t, `{"error":"missing or invalid bearer token"}`+"\n", a.body)
		require.Equal(t, `Bearer realm="orderly"`, a.header.Get("WWW-Authenticate"))
		a = e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusUnauthorized, a.status, a.body)
		a = e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Authorization", "s3cret")
		require.Equal(t, http.StatusUnauthorized, a.status, a.body)
		a = e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Authorization", "bearer s3cret")
		require.Equal(t, http.StatusAccepted, a.status, a.body)

		a = e.do("GET", "/api/v1/stats", "")
		if publicReads {
			require.Equal(t, http.StatusOK, a.status, a.body)
		} else {
			require.Equal(t, http.StatusUnauthorized, a.status, a.body)
		}
		a = e.do("GET", "/api/v1/stats", "", "Authorization", "Bearer s3cret")
		require.Equal(t, http.StatusOK, a.status, a.body)
		for _, probe := range []string{"/healthz", "/readyz"} {
			a = e.do("GET", probe, "")
			require.Equal(t, http.StatusOK, a.status, "probes need no token")
		}
	}
}

func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, a.status, a.body)
	require.Equal(t, `{"error":"cross-origin request rejected"}`+"\n", a.body)
	a = e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, a.status, a.body)
	a = e.do("GET", "/api/v1/stats", "", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusOK, a.status, "reads are not state changes")
	a = e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}]`, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusAccepted, a.status, a.body)
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	_, err := web.New(nil)
	require.Error(t, err)
	_, err = web.New(&web.Config{})
	require.Error(t, err)
	_, err = web.New(&web.Config{Store: brokenStore{}, MaxBodyBytes: -1})
	require.Error(t, err)
}

func TestPayloadJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte(`{"a":1,"b":[1,2]}`), `{"payload":{"a":1,"b":[1,2]},"score":1.5}`},
		{[]byte(`"<&>\u2028"`), `{"payload":"<&>\u2028","score":1.5}`},
		{[]byte(`""`), `{"payload":"","score":1.5}`},
		{[]byte(`"a b"`), `{"payload":"a b","score":1.5}`},
		{[]byte(`{"a": 1}`), `{"payload_base64":"eyJhIjogMX0=","score":1.5}`}, // not compact
		{[]byte(` 1`), `{"payload_base64":"IDE=","score":1.5}`},
		{[]byte("\"\xff\""), `{"payload_base64":"Iv8i","score":1.5}`}, // not UTF-8
		{[]byte{}, `{"payload_base64":"","score":1.5}`},
		{[]byte("plain text"), `{"payload_base64":"cGxhaW4gdGV4dA==","score":1.5}`},
	} {
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as the server's answers
		require.NoError(t, enc.Encode(wire.Payload{Data: c.data, Score: 1.5}))
		require.Equal(t, c.want+"\n", buf.String())
		var back wire.Payload
		require.NoError(t, json.Unmarshal([]byte(buf.String()), &back))
		require.Equal(t, c.data, []byte(string(back.Data)), "the stored bytes are recovered exactly")
	}
	var p wire.Payload
	require.Error(t, json.Unmarshal([]byte(`{"score":1}`), &p))
	require.Error(t, json.Unmarshal([]byte(`{"payload":1,"payload_base64":"AA==","score":1}`), &p))
	require.Error(t, json.Unmarshal([]byte(`{"payload_base64":"!","score":1}`), &p))
}
