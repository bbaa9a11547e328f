package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/openapitest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/internal/testing/webtest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// t0 is the node's clock in the tests: a round number of unix seconds
// (2023-11-14T22:13:20Z).
var t0 = webtest.T0

// Queues every test node has.
const (
	ordersShards = 4
	mailShards   = 1
)

// node is a real Orderly HTTP API on a real store (webtest), with queues
// "orders" (4 shards) and "mail" (1 shard), and a clock that stands at t0.
type node struct {
	t     *testing.T
	ctx   context.Context
	clock *clock.Simulated
	store *redisstore.Store
	ts    *webtest.Server
	// enqueues counts the enqueue requests the node received.
	enqueues atomic.Int64

	mu sync.Mutex // guards onEnqueue
	// onEnqueue, when set, runs before an enqueue request is served, with
	// the request's number (from 1); when it returns a status, the request
	// is answered that status with an error instead.
	onEnqueue func(n int64) int
}

type nodeOption func(*web.Config)

// withToken makes the node require a bearer token.
func withToken(token string) nodeOption { return func(c *web.Config) { c.Token = token } }

// withMaxPayload sets the node's payload size limit.
func withMaxPayload(n int) nodeOption { return func(c *web.Config) { c.MaxPayloadBytes = n } }

func newNode(t *testing.T, opts ...nodeOption) *node {
	t.Helper()
	cfg := &web.Config{Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(cfg)
	}
	n := &node{t: t, ctx: context.Background()}
	// Every request the CLI sends, and its answer, is checked against the
	// API's OpenAPI document.
	n.ts = webtest.NewServer(t, cfg, webtest.WithHandler(func(api http.Handler) http.Handler {
		return openapitest.Handler(t, n.hook(api))
	}))
	n.clock, n.store = n.ts.Clock, n.ts.Store
	n.ts.Register("orders", ordersShards)
	n.ts.Register("mail", mailShards)
	return n
}

// hook counts the enqueue requests and runs onEnqueue before api.
func (n *node) hook(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/jobs") {
			num := n.enqueues.Add(1)
			n.mu.Lock()
			hook := n.onEnqueue
			n.mu.Unlock()
			if hook != nil {
				if status := hook(num); status != 0 {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					w.Write([]byte(`{"error":"injected failure"}`))
					return
				}
			}
		}
		api.ServeHTTP(w, r)
	})
}

// setOnEnqueue sets the enqueue hook.
func (n *node) setOnEnqueue(f func(int64) int) {
	n.mu.Lock()
	n.onEnqueue = f
	n.mu.Unlock()
}

// result is what a command did.
type result struct {
	code           int
	stdout, stderr string
}

// runOpts are how a command runs: its stdin and terminals, its context,
// its environment variables.
type runOpts struct {
	stdin               io.Reader
	stdinTTY, stderrTTY bool
	ctx                 context.Context
	env                 map[string]string
}

// exec runs the orderly command args as Run would, with o's stdin,
// terminals and environment.
func exec(o runOpts, args ...string) result {
	var out, errOut bytes.Buffer
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	if o.stdin == nil {
		o.stdin = strings.NewReader("")
	}
	e := &env{
		ctx:       o.ctx,
		stdin:     o.stdin,
		stdout:    &out,
		stderr:    &errOut,
		getenv:    func(k string) string { return o.env[k] },
		now:       time.Now,
		stdinTTY:  o.stdinTTY,
		stderrTTY: o.stderrTTY,
		client:    &http.Client{Timeout: requestTimeout},
	}
	code := e.run(args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// run runs a command against the node (ORDERLY_HTTP points at it).
func (n *node) run(args ...string) result {
	return n.runWith(runOpts{}, args...)
}

// runWith runs a command against the node with o.
func (n *node) runWith(o runOpts, args ...string) result {
	n.t.Helper()
	if o.env == nil {
		o.env = map[string]string{}
	}
	if _, ok := o.env["ORDERLY_HTTP"]; !ok {
		o.env["ORDERLY_HTTP"] = n.ts.URL
	}
	return exec(o, args...)
}

// ok requires that r succeeded, and returns its stdout.
func (r result) ok(t *testing.T) string {
	t.Helper()
	require.Equal(t, ExitOK, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return r.stdout
}

// job returns the queued entry of id in queue, or nil.
func (n *node) job(queue, id string) *persistence.Job {
	n.t.Helper()
	info, err := n.store.GetJob(n.ctx, queue, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	require.NoError(n.t, err)
	return info.Queued
}

// queued returns every queued job of queue, by id.
func (n *node) queued(queue string) map[string]persistence.Job {
	n.t.Helper()
	jobs := map[string]persistence.Job{}
	opts := persistence.ListOptions{Order: persistence.OrderID, Limit: persistence.MaxListLimit, Payloads: persistence.MaxLookupPayloads}
	for {
		page, err := n.store.ListJobs(n.ctx, queue, opts)
		require.NoError(n.t, err)
		for _, j := range page.Jobs {
			jobs[j.ID] = j
		}
		if page.Next == "" {
			return jobs
		}
		opts.Cursor = page.Next
	}
}

// enqueue enqueues jobs into queue through the store.
func (n *node) enqueue(queue string, jobs ...persistence.NewJob) {
	n.t.Helper()
	require.NoError(n.t, n.store.Enqueue(n.ctx, queue, jobs))
}

// kill sends jobs to the morgue of queue with the error msg, as a shard
// actor would with max_retry_count 0: it enqueues them due at unix second
// 1, so that they come before any other queued job, then fetches them from
// their shards and fails them. Other queued jobs stay as they are.
func (n *node) kill(queue, msg string, jobs ...persistence.NewJob) {
	n.t.Helper()
	specs, err := n.store.Queues(n.ctx)
	require.NoError(n.t, err)
	shards := 0
	for _, s := range specs {
		if s.Name == queue {
			shards = s.Shards
		}
	}
	byShard := map[int]map[string]bool{}
	for i := range jobs {
		jobs[i].PerformAt = time.Unix(1, 0)
		shard := persistence.ShardOf(jobs[i].ID, shards)
		if byShard[shard] == nil {
			byShard[shard] = map[string]bool{}
		}
		byShard[shard][jobs[i].ID] = true
	}
	n.enqueue(queue, jobs...)
	for shard, ids := range byShard {
		lease, _, err := n.store.AcquireShard(n.ctx, persistence.ShardRef{Queue: queue, Shard: shard}, "test", time.Minute)
		require.NoError(n.t, err)
		res, err := n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Fetch: len(ids), NextSeq: 1})
		require.NoError(n.t, err)
		require.NotNil(n.t, res.Batch)
		var failures []persistence.Failure
		for _, j := range res.Batch.Jobs {
			require.True(n.t, ids[j.ID], "fetched %q, not a job to kill", j.ID)
			failures = append(failures, persistence.Failure{ID: j.ID, Error: msg, RetryAt: n.clock.Now()})
		}
		res, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Settle: 1, Failures: failures, NextSeq: 2})
		require.NoError(n.t, err)
		require.Len(n.t, res.Dead, len(ids))
		require.NoError(n.t, n.store.ReleaseShard(n.ctx, lease))
	}
}

// morgueIDs lists the ids in the morgue of queue.
func (n *node) morgueIDs(queue string) []string {
	n.t.Helper()
	page, err := n.store.ListMorgue(n.ctx, queue, persistence.ListOptions{Order: persistence.OrderID, Limit: persistence.MaxListLimit})
	require.NoError(n.t, err)
	ids := []string{}
	for _, e := range page.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// newJob is a job with a payload, due now.
func newJob(id, payload string) persistence.NewJob {
	return persistence.NewJob{ID: id, Payload: []byte(payload)}
}

// unreachable is an address where nothing listens.
const unreachable = "127.0.0.1:1"

// fakeNode is a server that answers every request with body (status 200)
// and returns its address: for answers a real node does not give.
func fakeNode(t *testing.T, body string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}
