package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// listJobs gets one page of queue q's listing and requires 200.
func (e *env) listJobs(query string) apiv1.JobPage {
	e.t.Helper()
	a := e.do("GET", "/api/v1/queues/q/jobs?"+query, "")
	require.Equal(e.t, http.StatusOK, a.status, "%s: %s", query, a.body)
	var p apiv1.JobPage
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	require.NoError(e.t, dec.Decode(&p), a.body)
	require.NotNil(e.t, p.Jobs, "jobs is [], never null")
	return p
}

// failDue fetches every due job of every shard of q and fails it with
// error "err-<id>", due again at retryAt(id).
func (e *env) failDue(retryAt func(id string) time.Time) {
	e.t.Helper()
	for sh := range testShards {
		lease, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "node-a", time.Minute)
		require.NoError(e.t, err)
		res, err := e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Fetch: 1000, NextSeq: 1, MaxRetryCount: 25})
		require.NoError(e.t, err)
		if res.Batch != nil {
			var failures []persistence.Failure
			for _, j := range res.Batch.Jobs {
				failures = append(failures, persistence.Failure{ID: j.ID, Error: "err-" + j.ID, RetryAt: retryAt(j.ID)})
			}
			_, err = e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Settle: 1, Failures: failures, NextSeq: 2, MaxRetryCount: 25})
			require.NoError(e.t, err)
		}
		require.NoError(e.t, e.store.ReleaseShard(e.ctx, lease))
	}
}

// listingStore records the options of the listings it serves.
type listingStore struct {
	persistence.Store
	mu   sync.Mutex // guards opts
	opts []persistence.ListOptions
}

func (s *listingStore) ListJobs(ctx context.Context, queue string, opts persistence.ListOptions) (persistence.JobPage, error) {
	s.mu.Lock()
	s.opts = append(s.opts, opts)
	s.mu.Unlock()
	return s.Store.ListJobs(ctx, queue, opts)
}

func (s *listingStore) last() persistence.ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts[len(s.opts)-1]
}

// The API turns a listing's query string into the store's ListOptions as
// they are: the store checks and applies them (its conformance suite,
// persistence/storetest, proves the orders, bounds, ties and cursors).
func TestListJobsQuery(t *testing.T) {
	t.Parallel()
	ls := &listingStore{}
	e := newEnv(t, func(c *web.Config) { c.Store = ls })
	ls.Store = e.store
	e.enqueue(`[{"id": "a"}]`)
	page := e.listJobs("limit=1&order=perform_at&rev=1")
	require.NotEmpty(t, page.Jobs)
	cursor := e.listJobs("limit=1").Next
	for _, c := range []struct {
		query string
		want  persistence.ListOptions
	}{
		{"", persistence.ListOptions{Order: persistence.OrderPerformAt}},
		{"order=id", persistence.ListOptions{Order: persistence.OrderID}},
		{"order=perform_at&min=1699999991&max=1699999993.5", persistence.ListOptions{Order: persistence.OrderPerformAt, Min: "1699999991", Max: "1699999993.5"}},
		{"order=retry_count&min=-1&max=%2Binf&rev=1", persistence.ListOptions{Order: persistence.OrderRetryCount, Min: "-1", Max: "+inf", Rev: true}},
		{"order=id&min=f05&max=r3&rev=0&limit=7", persistence.ListOptions{Order: persistence.OrderID, Min: "f05", Max: "r3", Limit: 7}},
		{"rev=TRUE&limit=1000&payloads=1000", persistence.ListOptions{Order: persistence.OrderPerformAt, Rev: true, Limit: 1000, Payloads: 1000}},
		{"rev=&order=&limit=", persistence.ListOptions{Order: persistence.OrderPerformAt}},
		{"order=id&min=%FF%FE&max=%F0%9F%98%80", persistence.ListOptions{Order: persistence.OrderID, Min: "\xff\xfe", Max: "😀"}},
		{"limit=1&cursor=" + url.QueryEscape(cursor), persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 1, Cursor: cursor}},
	} {
		a := e.do("GET", "/api/v1/queues/q/jobs?"+c.query, "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", c.query, a.body)
		require.Equal(t, c.want, ls.last(), c.query)
	}
}

// One round trip through the API: a page's JSON, and its cursor to the
// next.
func TestListJobsRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "b", "payload": {"id": "b"}, "perform_at": 1699999990},
		{"id": "a", "payload": {"id": "a"}, "perform_at": 1699999995},
		{"id": "c", "payload_base64": "AP8=", "score": 7}]`)
	a := e.do("GET", "/api/v1/queues/q/jobs?limit=2&order=perform_at&rev=1", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.True(t, strings.HasPrefix(a.body, `{"jobs":[`+
		`{"id":"c","perform_at":1700000000,"retry_count":-1,"error":"","payloads":[{"payload_base64":"AP8=","score":7}],"payload_count":1},`+
		`{"id":"a","perform_at":1699999995,"retry_count":-1,"error":"","payloads":[{"payload":{"id":"a"},"score":1700000000}],"payload_count":1}],"next":"`), a.body)
	var first apiv1.JobPage
	require.NoError(t, json.Unmarshal([]byte(a.body), &first))
	next := e.listJobs("limit=2&order=perform_at&rev=1&cursor=" + url.QueryEscape(first.Next))
	require.Equal(t, "", next.Next, "the last page")
	require.Len(t, next.Jobs, 1)
	require.Equal(t, "b", next.Jobs[0].ID)

	// Defaults: by perform_at (as the dashboard), ascending; by id when
	// asked.
	p := e.listJobs("")
	require.Equal(t, []string{"b", "a", "c"}, []string{p.Jobs[0].ID, p.Jobs[1].ID, p.Jobs[2].ID})
	p = e.listJobs("order=id")
	require.Equal(t, []string{"a", "b", "c"}, []string{p.Jobs[0].ID, p.Jobs[1].ID, p.Jobs[2].ID})
}

func TestListJobsPayloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var jobs []string
	for i := range 15 {
		jobs = append(jobs, fmt.Sprintf(`{"id": "many", "payload": %d, "score": %d}`, i, i))
	}
	jobs = append(jobs, `{"id": "bin", "payload_base64": "AP8="}`)
	e.enqueue("[" + strings.Join(jobs, ",") + "]")
	p := e.listJobs("")
	require.Len(t, p.Jobs, 2)
	require.Equal(t, "bin", p.Jobs[0].ID)
	require.Equal(t, []wire.Payload{{Data: []byte{0, 0xff}, Score: 1_700_000_000}}, p.Jobs[0].Payloads)
	require.Len(t, p.Jobs[1].Payloads, 10, "10 payloads by default")
	require.Equal(t, 15, p.Jobs[1].PayloadCount)
	require.Equal(t, []byte("0"), p.Jobs[1].Payloads[0].Data, "the lowest scores first")
	p = e.listJobs("payloads=1000&order=id&min=many")
	require.Len(t, p.Jobs[0].Payloads, 15)
	p = e.listJobs("payloads=2&order=id&min=many")
	require.Equal(t, []wire.Payload{{Data: []byte("0"), Score: 0}, {Data: []byte("1"), Score: 1}}, p.Jobs[0].Payloads)

	e.register("empty", 2)
	a := e.do("GET", "/api/v1/queues/empty/jobs", "")
	require.Equal(t, `{"jobs":[],"next":""}`+"\n", a.body)
}

func TestListJobsBadParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	morgueCursor := idCursor(t, e) // a morgue cursor, by id, reversed
	e.enqueue(`[{"id": "a"}, {"id": "b"}, {"id": "c"}]`)
	page := e.listJobs("limit=1")
	revPage := e.listJobs("limit=1&rev=1")
	atPage := e.listJobs("limit=1&order=perform_at")
	for _, c := range []struct{ query, field string }{
		{"order=score", "order"},
		{"order=updated_at", "order"},
		{"order=ID", "order"},
		{"limit=abc", "limit"},
		{"limit=1.5", "limit"},
		{"limit=-1", "limit"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=99999999999999999999999", "limit"},
		{"limit=%20100", "limit"},
		{"payloads=0", "payloads"},
		{"payloads=-5", "payloads"},
		{"payloads=1001", "payloads"},
		{"payloads=ten", "payloads"},
		{"order=perform_at&min=abc", "min"},
		{"order=perform_at&max=NaN", "max"},
		{"order=perform_at&min=nan", "min"},
		{"order=retry_count&min=1e999", "min"},
		{"order=retry_count&min=0x10", "min"},
		{"order=perform_at&min=5&max=1", "min"},
		{"min=" + strings.Repeat("x", 513), "min"},
		{"cursor=garbage!", "cursor"},
		{"cursor=" + strings.Repeat("A", 10000), "cursor"},
		{"cursor=YzE", "cursor"},
		{"rev=1&cursor=" + url.QueryEscape(page.Next), "cursor"},
		{"cursor=" + url.QueryEscape(revPage.Next), "cursor"},
		{"order=retry_count&cursor=" + url.QueryEscape(atPage.Next), "cursor"},
		{"cursor=" + morgueCursor, "cursor"},
		{"rev=maybe", "rev"},
		{"rev=2", "rev"},
		{"limit=1&limit=2", "limit"},
		{"order=id&order=id", "order"},
		{"cursor=&cursor=", "cursor"},
		{"offset=100", "offset"},
		{"Order=id", "Order"},
		{"%C3%A9=1", "é"},
	} {
		a := e.do("GET", "/api/v1/queues/q/jobs?"+c.query, "")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", c.query, a.body)
		msg, f := a.errorBody(t)
		require.Equal(t, c.field, f, "%s: %s", c.query, a.body)
		require.True(t, strings.HasPrefix(msg, c.field+": "), msg)
		require.Less(t, len(a.body), 1000, "the answer does not echo a huge value")
	}
	for _, query := range []string{"limit=%zz", "a;b", "=1"} {
		a := e.do("GET", "/api/v1/queues/q/jobs?"+query, "")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", query, a.body)
		require.Contains(t, a.body, "malformed query string", query)
	}
	for _, query := range []string{"", "rev=", "order=", "limit=", "rev=TRUE", "order=perform_at&min=-inf&max=%2Binf", "order=retry_count&min=-1&max=-1",
		"order=id&min=%FF%FE", "order=id&min=%00&max=%F0%9F%98%80", "limit=1000&payloads=1000", "limit=1&cursor=" + url.QueryEscape(page.Next) + "&min=1"} {
		a := e.do("GET", "/api/v1/queues/q/jobs?"+query, "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", query, a.body)
	}

	a := e.do("GET", "/api/v1/queues/nope/jobs", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Equal(t, `{"error":"unknown queue \"nope\"","field":"queue"}`+"\n", a.body)
	a = e.do("GET", "/api/v1/queues/no%20pe/jobs", "")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	_, f := a.errorBody(t)
	require.Equal(t, "queue", f)
	stats, err := e.store.Stats(e.ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 3, stats[0].Length, "reads change nothing")
}

func TestDeleteJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := []string{"plain", "a/b", "100%", "%41", "ünï/cödé", "sp ace?q=1#f", "..", ".", "a/", "/a", "+&=;,"}
	var jobs []string
	for _, id := range ids {
		b, err := json.Marshal(id)
		require.NoError(t, err)
		jobs = append(jobs, fmt.Sprintf(`{"id": %s, "payload": 1}, {"id": %s, "payload": 2}`, b, b))
	}
	e.enqueue(`[{"id": "keep"}, ` + strings.Join(jobs, ",") + "]")
	for _, id := range ids {
		path := "/api/v1/queues/q/jobs/" + escapeID(id)
		a := e.do("DELETE", path, "")
		require.Equal(t, http.StatusOK, a.status, "%s: %s", id, a.body)
		require.Equal(t, `{"deleted":1}`+"\n", a.body)
		a = e.do("GET", path, "")
		require.Equal(t, http.StatusNotFound, a.status, "%s is gone: %s", id, a.body)
		a = e.do("DELETE", path, "")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		msg, field := a.errorBody(t)
		require.Empty(t, field)
		require.Contains(t, msg, fmt.Sprintf("job %q is not queued in \"q\"", id))
		require.Contains(t, msg, "in-flight batch is not deleted")
	}
	l, _ := e.get("keep")
	require.NotNil(t, l.Queued, "other jobs stay")
	require.Contains(t, e.stats(), `"q":{"length":1,`)

	// An unescaped '/' works; a dot segment must be escaped.
	e.enqueue(`[{"id": "x/y"}]`)
	a := e.do("DELETE", "/api/v1/queues/q/jobs/x/y", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	req, err := http.NewRequest("DELETE", e.ts.URL, nil)
	require.NoError(t, err)
	req.URL.Opaque = "/api/v1/queues/q/jobs/x/../keep"
	a = e.send(req)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Contains(t, a.body, "not canonical")

	// In flight: not deleted; payloads queued meanwhile are.
	e.enqueue(`[{"id": "busy", "payload": 1}]`)
	e.fetch("busy")
	a = e.do("DELETE", "/api/v1/queues/q/jobs/busy", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	require.Contains(t, a.body, "in-flight batch is not deleted")
	e.enqueue(`[{"id": "busy", "payload": 2}]`)
	a = e.do("DELETE", "/api/v1/queues/q/jobs/busy", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	l, _ = e.get("busy")
	require.Nil(t, l.Queued)
	require.Len(t, l.Processing.Payloads, 1, "the in-flight batch is intact")
	require.Equal(t, "1", string(l.Processing.Payloads[0].Data))
	require.InDelta(t, 1_700_000_000, l.Processing.Payloads[0].Score, 1e-3, "default score: now, strictly increasing per shard")

	for _, c := range []struct {
		path, body, field string
		status            int
	}{
		{"/api/v1/queues/q/jobs/", "", "id", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/" + strings.Repeat("x", 513), "", "id", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/a%FFb", "", "id", http.StatusBadRequest},
		{"/api/v1/queues/nope/jobs/keep", "", "queue", http.StatusNotFound},
		{"/api/v1/queues/q/jobs/keep?force=1", "", "force", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/keep", `{"id": "keep"}`, "id", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/keep", `[]`, "", http.StatusBadRequest},
		{"/api/v1/queues/q/jobs/keep", `{`, "", http.StatusBadRequest},
	} {
		a := e.do("DELETE", c.path, c.body)
		require.Equal(t, c.status, a.status, "%s %s: %s", c.path, c.body, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.path)
	}
	a = e.do("DELETE", "/api/v1/queues/q/jobs/keep", ` {} `)
	require.Equal(t, http.StatusOK, a.status, "an empty object is no body: %s", a.body)
}

func TestProcessing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("GET", "/api/v1/queues/q/processing", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, `{"batches":[]}`+"\n", a.body)

	e.enqueue(`[{"id": "j", "payload": {"v": 1}, "score": 1}, {"id": "j", "payload_base64": "AP8=", "score": 2}]`)
	e.clock.Advance(250 * time.Millisecond)
	lease, _ := e.fetch("j")
	e.enqueue(`[{"id": "j", "payload": 3, "score": 3}]`) // queued, not in flight
	sh := persistence.ShardOf("j", testShards)
	a = e.do("GET", "/api/v1/queues/q/processing", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, fmt.Sprintf(`{"batches":[{"shard":%d,"owner":"node-a","epoch":%d,"seq":1,"fetched_at":1700000000.25,"jobs":[`+
		`{"id":"j","perform_at":1700000000,"retry_count":-1,"error":"","payloads":[{"payload":{"v":1},"score":1},{"payload_base64":"AP8=","score":2}],"payload_count":2}]}]}`+"\n",
		sh, lease.Epoch), a.body)

	// A second shard's batch, by shard.
	other := "k"
	for i := 0; persistence.ShardOf(other, testShards) == sh; i++ {
		other = fmt.Sprintf("k%d", i)
	}
	e.enqueue(`[{"id": "` + other + `"}]`)
	e.fetch(other)
	a = e.do("GET", "/api/v1/queues/q/processing", "")
	var ans apiv1.Processing
	require.NoError(t, json.Unmarshal([]byte(a.body), &ans))
	require.Len(t, ans.Batches, 2)
	require.Less(t, ans.Batches[0].Shard, ans.Batches[1].Shard)
	for _, b := range ans.Batches {
		require.Equal(t, "node-a", b.Owner)
		require.Len(t, b.Jobs, 1)
	}

	a = e.do("GET", "/api/v1/queues/nope/processing", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	_, f := a.errorBody(t)
	require.Equal(t, "queue", f)
	a = e.do("GET", "/api/v1/queues/q/processing?shard=1", "")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	require.Equal(t, `{"error":"shard: unknown parameter: this endpoint takes none","field":"shard"}`+"\n", a.body)
}
