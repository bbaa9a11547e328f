package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/queuehistory"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/ui"
)

// Environment of the browser tests.
const (
	// envChromium points at a Chromium other than /usr/bin/chromium.
	envChromium = "ORDERLY_CHROMIUM"
	// envRequireBrowser makes a missing Chromium a failure (CI sets it).
	envRequireBrowser = "ORDERLY_REQUIRE_BROWSER"
	// envScreenshots names a directory that receives a PNG of each page at
	// 1440x900.
	envScreenshots = "ORDERLY_UI_SCREENSHOTS"
)

// waitTimeout bounds each wait for the page.
const waitTimeout = 20 * time.Second

// chromium returns the browser binary, skipping the test when there is none
// (or failing when ORDERLY_REQUIRE_BROWSER is set).
func chromium(t *testing.T) string {
	t.Helper()
	p := os.Getenv(envChromium)
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv(envRequireBrowser) != "" {
			t.Fatalf("no Chromium at %s (%v), and %s is set: install chromium or point %s at it", p, err, envRequireBrowser, envChromium)
		}
		t.Skipf("no Chromium at %s: set %s to run the browser tests", p, envChromium)
	}
	return p
}

// browser is one headless Chromium tab and what its console said.
type browser struct {
	t   *testing.T
	ctx context.Context
	url string

	mu       sync.Mutex
	problems []string // exceptions, console.error calls, CSP violations
}

// newBrowser starts Chromium (a fresh profile in t.TempDir()) with a
// 1440x900 viewport, and stops it, with every goroutine of chromedp, when
// the test ends. Uncaught exceptions, console.error calls and security
// messages (a Content-Security-Policy violation) fail the test.
func newBrowser(t *testing.T, baseURL string) *browser {
	t.Helper()
	exec := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exec),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, url: baseURL}
	consoleDone := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser to exit
		<-consoleDone
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("browser console: %s", p)
		}
	})
	// Start the browser and the tab, then listen to the console.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900)); err != nil {
		close(consoleDone)
		t.Fatalf("start chromium %s: %v", exec, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") || m.Source == "security" {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs actions, failing the test on an error.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v\npage text:\n%s", err, b.pageText())
	}
}

// open loads a path of the dashboard.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.url + path))
}

// eval evaluates a JavaScript expression and decodes its value into T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor waits until the JavaScript expression is truthy.
func (b *browser) waitFor(expr, what string) {
	b.t.Helper()
	b.waitWithin(waitTimeout, expr, what)
}

// waitWithin waits up to d until the JavaScript expression is truthy.
func (b *browser) waitWithin(d time.Duration, expr, what string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(d)))
	if err != nil {
		b.t.Fatalf("waiting for %s: %v\n(%s)\npage text:\n%s", what, err, expr, b.pageText())
	}
}

// text returns the textContent of the first element matching the CSS
// selector, waiting for it to be there.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.waitFor(fmt.Sprintf(`document.querySelector(%s)`, jsString(sel)), sel)
	return eval[string](b, fmt.Sprintf(`document.querySelector(%s).textContent`, jsString(sel)))
}

// waitText waits until the first element matching sel has the text want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf(`document.querySelector(%s)?.textContent === %s`, jsString(sel), jsString(want)),
		fmt.Sprintf("%s to read %q", sel, want))
}

// click clicks the first element matching the CSS selector once visible.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// pageText is the visible text of the page, for failure messages.
func (b *browser) pageText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(unavailable: " + err.Error() + ")"
	}
	return s
}

// screenshot writes the viewport as dir/name.png when ORDERLY_UI_SCREENSHOTS is set.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return
	}
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	// Let the live dot finish pulsing and move the mouse out of the way.
	b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// screenshotAt writes the page at another viewport size.
func (b *browser) screenshotAt(name string, width, height int64) {
	b.t.Helper()
	if os.Getenv(envScreenshots) == "" {
		return
	}
	b.do(chromedp.EmulateViewport(width, height))
	b.screenshot(name)
	b.do(chromedp.EmulateViewport(1440, 900))
}

// darkScreenshot writes the page in the dark theme (prefers-color-scheme).
func (b *browser) darkScreenshot(name string) {
	b.t.Helper()
	if os.Getenv(envScreenshots) == "" {
		return
	}
	scheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return err
		})
	}
	b.do(scheme("dark"))
	b.screenshot(name)
	b.do(scheme("light"))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ---- The fixture: a real store and API server ----

// Fixture ids. hostileID would run script if the app rendered ids as HTML.
const (
	hostileID = `<img src=x onerror="window.__xss=1">`
	slashID   = "a/b %2F?#ü"
	dotID     = ".."
	longID    = "tenant-acme-corporation/customer-8f14e45f-ceea-467f-a0e6-1b2c3d4e5f60/invoice-2024-05-000123/line-items/recalculate-taxes"
)

// fixture is a store on a real Redis behind the real API server.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	store  *redisstore.Store
	ts     *httptest.Server
	leases map[persistence.ShardRef]persistence.Lease
	outage atomic.Bool // the API's store fails its reads of metrics
	// history is the per-minute history the API serves.
	history *queuehistory.Recorder
	// pull serves the pull routes; reports is its pull queue.
	pull *pull.Broker
}

// outageStore is the fixture's store as the API sees it: while outage is
// set, Stats fails as an unreachable Redis does.
type outageStore struct {
	persistence.Store
	persistence.Resharder // the store's, so that the API shows and starts reshards
	outage                *atomic.Bool
}

func (s outageStore) Stats(ctx context.Context, queues ...string) ([]persistence.QueueStats, error) {
	if s.outage.Load() {
		return nil, fmt.Errorf("redis: dial tcp 10.0.0.9:6379: %w", syscall.ECONNREFUSED)
	}
	return s.Store.Stats(ctx, queues...)
}

var members = []apiv1.Member{
	{Name: "node-a", State: "alive", HTTP: "10.0.0.1:8080", Actor: "10.0.0.1:8090", Queues: []string{"orders", "emails", "reports"}, Version: "v0.4.0"},
	{Name: "node-b", State: "alive", HTTP: "10.0.0.2:8080", Actor: "10.0.0.2:8090", Queues: []string{"orders", "emails"}, Version: "v0.4.0"},
	{Name: "node-c", State: "draining", HTTP: "10.0.0.3:8080", Actor: "10.0.0.3:8090", Queues: []string{"orders"}, Version: "v0.4.0"},
	{Name: "node-d", State: "dead", HTTP: "10.0.0.4:8080", Actor: "10.0.0.4:8090", Queues: []string{"orders"}, Version: "v0.3.9"},
}

// newFixture registers three queues and fills them:
//
//	orders  (4 shards): dead-1..3 in the morgue, retry-1 failed once (due
//	        in an hour), order-1, order-2 (two payloads), big-1, bin-1
//	        (binary), the hostile, slash and dot ids, later-1 (due in an
//	        hour); shards 0-1 leased by node-a, 2 by node-b, 3 by node-d
//	        (dead: a stale lease)
//	emails  (2 shards): sent-1..4 processed; mail-1 in flight at node-b;
//	        mail-9 queued
//	reports (1 shard): empty, no lease
func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	return newFixtureTokens(t, token, "", false)
}

// newFixtureTokens is newFixture with a read-only token as well, and the
// API telling that the store is the embedded one.
func newFixtureTokens(t *testing.T, token, readToken string, embedded bool, opts ...fixtureOption) *fixture {
	t.Helper()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	f := &fixture{t: t, ctx: context.Background(), store: store, leases: map[persistence.ShardRef]persistence.Lease{},
		history: queuehistory.New(db.Client, queuehistory.Config{Prefix: db.Prefix}), pull: pull.New(nil)}
	f.pull.Handler("reports", pull.Options{})
	t.Cleanup(f.pull.Stop)
	for q, n := range map[string]int{"orders": 4, "emails": 2, "reports": 1} {
		require.NoError(t, store.RegisterQueue(f.ctx, persistence.QueueSpec{Name: q, Shards: n}))
	}

	// The morgue: fetched and failed with max_retry_count 0.
	f.enqueue("orders", job("dead-1", `{"sku":1}`, 0), job("dead-2", `{"sku":2}`, 0), job("dead-3", `{"sku":3}`, 0))
	f.settleAll("orders", 4, "node-a", func(id string) *persistence.Failure {
		return &persistence.Failure{ID: id, Error: "payment gateway timeout for " + id, RetryAt: time.Now()}
	}, 0)
	// A retry: failed once, due again in an hour.
	f.enqueue("orders", job("retry-1", `{"sku":7}`, 0))
	f.settleAll("orders", 4, "node-a", func(id string) *persistence.Failure {
		return &persistence.Failure{ID: id, Error: "HTTP 502 from inventory", RetryAt: time.Now().Add(time.Hour)}
	}, 25)
	// Processed jobs.
	f.enqueue("emails", job("sent-1", `"a"`, 0), job("sent-2", `"b"`, 0), job("sent-3", `"c"`, 0), job("sent-4", `"d"`, 0))
	f.settleAll("emails", 2, "node-a", func(string) *persistence.Failure { return nil }, 25)

	one := 1.0
	f.enqueue("orders",
		job("order-1", `{"sku":42,"qty":2}`, 0),
		job("order-2", `{"sku":43}`, 0),
		persistence.NewJob{ID: "order-2", Payload: []byte(`{"sku":44,"note":"gift wrap"}`), Score: &one,
			Headers: map[string]string{"tenant": "<acme>", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		job("big-1", `{"n":12345678901234567890,"f":1.0}`, 0),
		job(hostileID, `"<b>bold</b>"`, 0),
		job(slashID, `{"path":"a/b"}`, 0),
		job(dotID, `{"dots":2}`, 0),
		job(longID, `{"invoice":"2024-05-000123","lines":[{"sku":"A-1","qty":3,"price":"19.90"},{"sku":"B-7","qty":1,"price":"240.00"}],"currency":"EUR","recalculate":true}`, 0),
		persistence.NewJob{ID: "bin-1", Payload: []byte{0, 0xff}, ExpiresAt: time.Unix(1<<33, 0)},
		persistence.NewJob{ID: "later-1", Payload: []byte(`{"sku":9}`), PerformAt: time.Now().Add(time.Hour)},
	)

	// In flight: node-b fetched mail-1's shard.
	f.enqueue("emails", job("mail-1", `{"to":"ada@example.com"}`, 0))
	shard := persistence.ShardOf("mail-1", 2)
	lease := f.acquire("emails", shard, "node-b")
	res, err := store.Advance(f.ctx, lease, persistence.AdvanceRequest{Fetch: 100, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.NotNil(t, res.Batch)
	f.enqueue("emails", job("mail-9", `{"to":"bob@example.com"}`, 0))
	f.acquire("emails", 1-shard, "node-a")

	// Leases of orders.
	for s, owner := range []string{"node-a", "node-a", "node-b", "node-d"} {
		f.acquire("orders", s, owner)
	}

	cfg := &web.Config{
		Store:         outageStore{Store: store, Resharder: store, outage: &f.outage},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Token:         token,
		ReadToken:     readToken,
		EmbeddedStore: embedded,
		UI:            ui.Handler(),
		History:       f.history,
		Pull:          f.pull,
		QueueLimits: map[string]apiv1.QueueLimits{
			"orders": {MaxConcurrency: 4, RateLimit: &apiv1.RateLimit{PerSecond: 10, Burst: 20}},
		},
		Periodic: func(context.Context) ([]apiv1.Periodic, error) {
			last, next := float64(time.Now().Unix()-60), float64(time.Now().Unix()+3540)
			return []apiv1.Periodic{{Name: "hourly-report", Queue: "reports", Schedule: "@hourly", ID: "report", LastTick: &last, NextTick: &next}}, nil
		},
		Members: func(context.Context) (string, []apiv1.Member) {
			return "node-a", members
		},
	}
	for _, o := range opts {
		if o.config != nil {
			o.config(cfg)
		}
	}
	srv, err := web.New(cfg)
	require.NoError(t, err)
	var h http.Handler = srv
	for _, o := range opts {
		if o.wrap != nil {
			h = o.wrap(h)
		}
	}
	f.ts = httptest.NewServer(h)
	t.Cleanup(f.ts.Close)
	return f
}

// fixtureOption adjusts the fixture's API: its configuration, and a
// handler in front of it.
type fixtureOption struct {
	config func(*web.Config)
	wrap   func(http.Handler) http.Handler
}

func job(id, payload string, score float64) persistence.NewJob {
	return persistence.NewJob{ID: id, Payload: []byte(payload), Score: &score}
}

func (f *fixture) enqueue(q string, jobs ...persistence.NewJob) {
	f.t.Helper()
	require.NoError(f.t, f.store.Enqueue(f.ctx, q, jobs))
}

func (f *fixture) acquire(q string, shard int, owner string) persistence.Lease {
	f.t.Helper()
	ref := persistence.ShardRef{Queue: q, Shard: shard}
	lease, _, err := f.store.AcquireShard(f.ctx, ref, owner, 10*time.Minute)
	require.NoError(f.t, err)
	f.leases[ref] = lease
	return lease
}

// settleAll fetches every due job of the queue, shard by shard, and settles
// it: fail returns the failure of an id, nil for a success.
func (f *fixture) settleAll(q string, shards int, owner string, fail func(id string) *persistence.Failure, maxRetry int) {
	f.t.Helper()
	for s := range shards {
		lease := f.acquire(q, s, owner)
		res, err := f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{Fetch: 100, NextSeq: 1, MaxRetryCount: maxRetry})
		require.NoError(f.t, err)
		if res.Batch != nil {
			var failures []persistence.Failure
			for _, j := range res.Batch.Jobs {
				if fl := fail(j.ID); fl != nil {
					failures = append(failures, *fl)
				}
			}
			_, err = f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{Settle: 1, Failures: failures, NextSeq: 2, MaxRetryCount: maxRetry})
			require.NoError(f.t, err)
		}
		require.NoError(f.t, f.store.ReleaseShard(f.ctx, lease))
	}
}

// simulate runs a worker on one shard of q until stop is called: it
// enqueues a few jobs every 150 ms and settles the batch it fetched before,
// failing about one in five (retried an hour later). Stop settles the last
// batch, so the shard has nothing in flight afterwards.
func (f *fixture) simulate(t *testing.T, q string, shard int) (stop func()) {
	specs, err := f.store.Queues(f.ctx)
	require.NoError(t, err)
	shards := 0
	for _, s := range specs {
		if s.Name == q {
			shards = s.Shards
		}
	}
	lease, ok := f.leases[persistence.ShardRef{Queue: q, Shard: shard}]
	require.True(t, ok, "the fixture holds no lease of %s/%d", q, shard)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var (
			inFlight int64 // the seq of the batch in flight, 0 when none
			pending  []persistence.Job
			next     = int64(1)
		)
		settle := func(fetch int) {
			var failures []persistence.Failure
			for _, j := range pending {
				if persistence.ShardOf(j.ID, 5) == 0 {
					failures = append(failures, persistence.Failure{ID: j.ID, Error: "smtp: 421 try again later", RetryAt: time.Now().Add(time.Hour)})
				}
			}
			res, err := f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{
				Settle: inFlight, Failures: failures, Fetch: fetch, NextSeq: next, MaxRetryCount: 25})
			if err != nil {
				t.Errorf("simulate: %v", err)
				return
			}
			inFlight, pending = 0, nil
			if res.Batch != nil {
				inFlight, pending = next, res.Batch.Jobs
			}
			next++
		}
		for i := 0; ; i++ {
			select {
			case <-done:
				settle(0)
				return
			case <-time.After(150 * time.Millisecond):
			}
			var jobs []persistence.NewJob
			for n := 0; len(jobs) < 1+i%5; n++ {
				if id := fmt.Sprintf("sim-%d-%d", i, n); persistence.ShardOf(id, shards) == shard {
					jobs = append(jobs, job(id, `{"to":"someone@example.com"}`, 0))
				}
			}
			if err := f.store.Enqueue(f.ctx, q, jobs); err != nil {
				t.Errorf("simulate: %v", err)
				return
			}
			settle(10)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
	t.Cleanup(stop)
	return stop
}

// fillStateful registers a stateful queue, accounts (2 shards), and gives it:
//
//	acct-1    processed: its state ({"status": "paid", ...}, version 1)
//	          and a timer in 30 minutes remain, no payload
//	acct-2    a binary state (4 bytes) and a queued payload
//	acct-big  a JSON state longer than the page's preview
//	acct-del  a deleted state (a tombstone at version 2) and a queued payload
func (f *fixture) fillStateful() {
	f.t.Helper()
	require.NoError(f.t, f.store.RegisterQueue(f.ctx, persistence.QueueSpec{Name: "accounts", Shards: 2}))
	f.enqueue("accounts", job("acct-1", `{"event":"paid"}`, 0))
	shard := persistence.ShardOf("acct-1", 2)
	lease := f.acquire("accounts", shard, "node-a")
	res, err := f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, MaxRetryCount: 25, Stateful: true})
	require.NoError(f.t, err)
	require.NotNil(f.t, res.Batch)
	_, err = f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 25, Stateful: true,
		StateWrites: []persistence.StateWrite{{ID: "acct-1", Data: []byte(`{"status":"paid","total":42.5}`)}},
		TimerWrites: []persistence.TimerWrite{{ID: "acct-1", At: time.Now().Add(30 * time.Minute)}}})
	require.NoError(f.t, err)
	require.NoError(f.t, f.store.ReleaseShard(f.ctx, lease))

	_, err = f.store.SetState(f.ctx, "accounts", "acct-2", []byte{0, 1, 2, 0xff}, 0, 0)
	require.NoError(f.t, err)
	f.enqueue("accounts", job("acct-2", `{"event":"created"}`, 0))
	v, err := f.store.SetState(f.ctx, "accounts", "acct-del", []byte(`{"status":"closed"}`), 0, 0)
	require.NoError(f.t, err)
	_, err = f.store.DeleteState(f.ctx, "accounts", "acct-del", v)
	require.NoError(f.t, err)
	f.enqueue("accounts", job("acct-del", `{"event":"reopened"}`, 0))
	big, err := json.Marshal(map[string]any{"lines": make([]int, 1500)})
	require.NoError(f.t, err)
	_, err = f.store.SetState(f.ctx, "accounts", "acct-big", big, 0, 0)
	require.NoError(f.t, err)
}

func (f *fixture) stats(q string) persistence.QueueStats {
	f.t.Helper()
	st, err := f.store.Stats(f.ctx, q)
	require.NoError(f.t, err)
	return st[0]
}

// ---- The tests ----

// TestBrowser drives the dashboard in headless Chromium against the real API
// on a real store: every page shows what the store holds, and a morgue
// requeue through the UI changes the store and the page.
func TestBrowser(t *testing.T) {
	chromium(t)
	f := newFixture(t, "")
	b := newBrowser(t, f.ts.URL)
	// The steps share the page's state: the first failure stops them.
	step := func(name string, fn func(t *testing.T)) {
		if t.Failed() {
			return
		}
		t.Run(name, func(t *testing.T) {
			b.t = t
			fn(t)
		})
	}

	step("overview", func(t *testing.T) {
		b.open("/")
		b.waitFor(`document.querySelector('tr[data-queue="orders"]')`, "the queues table")
		for _, q := range []string{"emails", "orders", "reports"} {
			st := f.stats(q)
			for col, want := range map[string]int64{
				"length": st.Length, "fresh": st.Fresh, "retries": st.Retries, "morgue_length": st.MorgueLength,
				"busy": st.Busy, "processed": st.Processed, "failed": st.Failed,
			} {
				b.waitText(fmt.Sprintf(`tr[data-queue=%q] td[data-col=%q]`, q, col), fmt.Sprint(want))
			}
		}
		orders := f.stats("orders")
		require.EqualValues(t, 10, orders.Length, "order-1, order-2, big-1, bin-1, hostile, slash, dot, long, later-1, retry-1")
		require.EqualValues(t, 1, orders.Retries)
		require.EqualValues(t, 3, orders.MorgueLength)
		require.EqualValues(t, 1, f.stats("emails").Busy)
		require.EqualValues(t, 4, f.stats("emails").Processed)

		// Totals: sums, and the lag as a duration.
		b.waitText(`[data-total="morgue_length"] .card-value`, "3")
		b.waitText(`[data-total="length"] .card-value`, "11")
		b.waitText(`[data-total="processed"] .card-value`, "4")
		require.Regexp(t, `^\d+(\.\d)?(ms|s)$|^\d+m( \d+s)?$`, b.text(`[data-total="lag"] .card-value`))
		// Header: the answering node, live, and a link per queue.
		b.waitText(`.self-name`, "node-a")
		b.waitFor(`document.querySelector('.live').dataset.state === 'live'`, "the live indicator")
		b.waitFor(`document.querySelectorAll('.nav-queue').length === 3`, "the queues in the navigation")
		// The sidebar's count is always the queued jobs; the dead have a
		// badge of their own.
		b.waitText(`.nav-queue[data-queue="orders"] .nav-count.queued`, "10")
		require.Equal(t, "3", b.text(`.nav-queue[data-queue="orders"] .nav-count.dead`))
		require.False(t, eval[bool](b, `!!document.querySelector('.nav-queue[data-queue="reports"] .nav-count.dead')`))
		require.True(t, eval[bool](b, `document.querySelector('#embedded-store').hidden`), "no in-memory notice on Redis")
		// The periodic jobs, with their queue linked.
		b.waitFor(`!document.querySelector('#periodic').hidden`, "the periodic jobs")
		require.Equal(t, "@hourly", b.text(`tr[data-periodic="hourly-report"] td.mono`))
		require.Equal(t, "reports", b.text(`tr[data-periodic="hourly-report"] a`))
		// The charts have a line once two polls have been made; hovering
		// reads the values out.
		b.waitFor(`document.querySelectorAll('.charts .line.s0').length === 2`, "the charts")
		b.do(chromedp.Evaluate[chromedp.Void](`(() => {
			const o = document.querySelectorAll('.charts .overlay')[1], r = o.getBoundingClientRect();
			o.dispatchEvent(new MouseEvent('mousemove', {clientX: r.right - 1, clientY: r.top + 5, bubbles: true}));
		})()`))
		b.waitFor(`(t => t && !t.hidden && /processed\/s\s*0/.test(t.innerText) && /failed\/s\s*0/.test(t.innerText))(document.querySelectorAll('.chart-tip')[1])`, "the readout")
		if os.Getenv(envScreenshots) != "" {
			// Some traffic, so that the charts have something to show.
			stop := f.simulate(t, "emails", 1-persistence.ShardOf("mail-1", 2))
			b.waitWithin(time.Minute, `(document.querySelectorAll('.charts .line.s0')[1]?.getAttribute('d') || '').split('L').length > 20`, "half a minute of chart")
			b.screenshot("overview")
			b.screenshotAt("overview-1280", 1280, 800)
			b.darkScreenshot("overview-dark")
			stop()
		}
	})

	step("queue", func(t *testing.T) {
		// From the overview's table to the queue page.
		b.click(`tr[data-queue="orders"] .qcell a`)
		b.waitFor(`location.pathname === '/queues/orders'`, "the queue page")
		b.waitFor(`document.querySelector('.job[data-id="order-1"]')`, "order-1")
		require.Equal(t, "{\n  \"sku\": 42,\n  \"qty\": 2\n}", b.text(`.job[data-id="order-1"] pre.code`))
		require.Equal(t, "fresh", b.text(`.job[data-id="order-1"] .badge`))
		require.Equal(t, "retry 0", b.text(`.job[data-id="retry-1"] .badge`))
		require.Equal(t, "HTTP 502 from inventory", b.text(`.job[data-id="retry-1"] .job-error`))
		require.Equal(t, 2, eval[int](b, `document.querySelectorAll('.job[data-id="order-2"] .payload').length`))
		// Numbers a double cannot hold are shown as sent.
		require.Equal(t, "{\n  \"n\": 12345678901234567890,\n  \"f\": 1.0\n}", b.text(`.job[data-id="big-1"] pre.code`))
		require.Equal(t, "binary · 2 bytes · base64", b.text(`.job[data-id="bin-1"] .payload-kind`))
		require.Equal(t, "AP8=", b.text(`.job[data-id="bin-1"] pre.code`))
		// A payload's expiry shows beside its score (docs/contract.md §3.15).
		require.Contains(t, b.text(`.job[data-id="bin-1"] .payload-expires`), "expires")
		require.Equal(t, 0, eval[int](b, `document.querySelectorAll('.job[data-id="big-1"] .payload-expires').length`))
		// Hostile ids and payloads are text.
		require.Equal(t, hostileID, eval[string](b, `[...document.querySelectorAll('.job')].find(e => e.dataset.id.startsWith('<img')).querySelector('.job-id').textContent`))
		require.Equal(t, `"<b>bold</b>"`, eval[string](b, `[...document.querySelectorAll('.job')].find(e => e.dataset.id.startsWith('<img')).querySelector('pre.code').textContent`))
		require.Equal(t, 0, eval[int](b, `document.querySelectorAll('#content img, #content b').length`))
		require.False(t, eval[bool](b, `window.__xss === 1`))
		// The breadcrumb names the queue; the header shows its limits, or
		// that it has none.
		require.Equal(t, "Overview/Queues/orders", b.text(`.crumbs`))
		b.waitText(`#queue-limits [data-limit="max_concurrency"]`, "max_concurrency 4")
		require.Equal(t, "rate_limit 10/s, burst 20", b.text(`#queue-limits [data-limit="rate_limit"]`))
		// Header numbers.
		b.waitText(`[data-stat="length"] .qstat-value`, "10")
		b.waitText(`[data-tab="morgue"] .tab-count`, "3")
		for _, k := range []string{"snoozed", "discarded", "cancelled", "expired"} {
			require.Equal(t, "0", b.text(`[data-stat="`+k+`"] .qstat-value`), k)
		}

		// Filters: fresh only, by retry_count.
		b.click(`.quick a[title^="retry_count ≥ 0"]`)
		b.waitFor(`location.search === '?order=retry_count&min=0' && document.querySelectorAll('.job').length === 1 && document.querySelector('.job[data-id="retry-1"]')`, "the retries filter")
		// The listing's default order is perform_at: the job due in an hour
		// comes last.
		b.open("/queues/orders")
		b.waitFor(`document.querySelectorAll('.job').length === 10`, "every job")
		require.Equal(t, "later-1", eval[string](b, `[...document.querySelectorAll('.job')].at(-1).dataset.id`))
		// Descending ids, four at a time through the API's cursor.
		b.open("/queues/orders?order=id&dir=desc&limit=4")
		var ids []string
		for page, want := range [][]string{
			{longID, "retry-1", "order-2", "order-1"},
			{"later-1", "bin-1", "big-1", slashID},
			{hostileID, dotID},
		} {
			b.waitFor(fmt.Sprintf(`document.querySelector('.pager')?.textContent.startsWith('Page %d ·')`, page+1), "the page")
			got := eval[[]string](b, `[...document.querySelectorAll('.job')].map(e => e.dataset.id)`)
			require.Equal(t, want, got, "page %d", page+1)
			ids = append(ids, got...)
			if page < 2 {
				b.click(`#next-page`)
			}
		}
		require.Contains(t, b.text(`.pager`), "end of the listing")
		require.Len(t, ids, 10)
		b.open("/queues/orders?order=id&dir=desc")
		b.waitFor(`document.querySelectorAll('.job').length === 10`, "every job")
		// A queue that does not exist shows no actions, and says so.
		b.open("/queues/emails/morgue")
		b.waitText(`#queue-limits [data-limit="max_concurrency"]`, "max_concurrency none")
		require.Equal(t, "rate_limit none", b.text(`#queue-limits [data-limit="rate_limit"]`))
		require.Equal(t, "Overview/Queues/emails/Morgue", b.text(`.crumbs`))
		require.Equal(t, "/queues/emails", eval[string](b, `new URL(document.querySelector('.crumbs a.crumb-queue').href).pathname`))
		// A pull queue's header counts its waiting workers and held
		// leases on the answering node (docs/contract.md §6.6).
		require.Equal(t, 0, eval[int](b, `document.querySelectorAll('#queue-limits [data-limit="pull"]').length`), "emails is no pull queue")
		b.open("/queues/reports")
		b.waitText(`#queue-limits [data-limit="pull"]`, "pull 0 waiting, 0 held")
		pulling, stopPull := context.WithCancel(context.Background())
		pulled := make(chan error, 1)
		go func() {
			_, err := f.pull.Pull(pulling, "reports", 1, 30*time.Second)
			pulled <- err
		}()
		b.waitText(`#queue-limits [data-limit="pull"]`, "pull 1 waiting, 0 held")
		stopPull()
		require.NoError(t, <-pulled)
		b.waitText(`#queue-limits [data-limit="pull"]`, "pull 0 waiting, 0 held")
		b.open("/queues/nosuchqueue")
		b.waitFor(`!document.querySelector('#unknown-queue').hidden`, "the unknown-queue notice")
		require.Zero(t, eval[int](b, `[...document.querySelectorAll('[data-action]')].filter(e => e.offsetParent !== null).length`))
		b.screenshot("queue")
		b.screenshotAt("queue-1280", 1280, 800)
		b.screenshotAt("queue-900", 900, 900)
		b.darkScreenshot("queue-dark")
	})

	step("job", func(t *testing.T) {
		// Ids with '/', '%', '?', '#' and unicode travel escaped.
		b.open("/queues/orders")
		b.waitFor(`document.querySelector('.job a.job-id')`, "the jobs")
		b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll('.job')].find(e => e.dataset.id === %s).querySelector('a.job-id').click()`, jsString(slashID))))
		b.waitText(`.job-id-big`, slashID)
		require.Contains(t, b.text(`[data-record="queued"] pre.code`), `"path": "a/b"`)
		require.Contains(t, b.text(`[data-record="processing"]`), "Not in flight")
		b.screenshot("job")

		// An in-flight job shows its batch.
		b.open("/queues/emails/job?id=mail-1")
		b.waitFor(`document.querySelector('[data-record="processing"] .chip.owner')`, "the in-flight record")
		b.screenshot("job-in-flight")
		require.Equal(t, "node-b", b.text(`[data-record="processing"] .chip.owner`))
		require.Contains(t, b.text(`[data-record="queued"]`), "Not queued")

		// The id "..": the browser cannot send it as a path segment (the URL
		// parser resolves "%2E%2E" away), so the page finds it through the
		// listing.
		require.Equal(t, "/api/v1/queues/orders/", eval[string](b, `new URL('/api/v1/queues/orders/jobs/%2E%2E', location.href).pathname`))
		b.open("/queues/orders/job?id=..")
		b.waitText(`.job-id-big`, "..")
		require.Contains(t, b.text(`[data-record="queued"] pre.code`), `"dots": 2`)

		// An unknown id.
		b.open("/queues/orders/job?id=nope")
		b.waitText(`.empty-title`, "No such job")

		// The finder in the header: a queue and an id.
		b.waitFor(`document.querySelector('#find-queue').value === 'orders'`, "the finder to follow the page")
		b.do(chromedp.SendKeys(chromedp.CSS(`#find-id`), "order-2\n"))
		b.waitText(`.job-id-big`, "order-2")
		require.Equal(t, 2, eval[int](b, `document.querySelectorAll('[data-record="queued"] .payload').length`))
		// Headers show per payload, as text (docs/contract.md §10).
		require.Equal(t, 1, eval[int](b, `document.querySelectorAll('[data-record="queued"] .payload-headers').length`))
		require.Equal(t, 1, eval[int](b, `document.querySelectorAll('[data-record="queued"] [data-payload="1"] .payload-headers').length`))
		require.Equal(t, "tenant<acme>traceparent00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			b.text(`[data-record="queued"] .payload-headers`))
		b.screenshot("job-headers")

		// Delete a job through the UI.
		b.open("/queues/orders/job?id=later-1")
		b.click(`#delete-job`)
		b.click(`#confirm-ok`)
		b.waitText(`.empty-title`, "No such job")
		_, err := f.store.GetJob(f.ctx, "orders", "later-1")
		require.ErrorIs(t, err, persistence.ErrNotFound)
	})

	step("processing", func(t *testing.T) {
		b.open("/queues/emails/processing")
		sel := fmt.Sprintf(`.batch[data-shard="%d"]`, persistence.ShardOf("mail-1", 2))
		b.waitFor(fmt.Sprintf(`document.querySelector('%s tr[data-id="mail-1"]')`, sel), "mail-1's batch")
		require.Equal(t, "node-b", b.text(sel+` .chip.owner`))
		b.waitText(`[data-tab="processing"] .tab-count`, "1")
		b.screenshot("processing")
	})

	step("cluster", func(t *testing.T) {
		b.open("/cluster")
		b.waitFor(`document.querySelectorAll('tr[data-member]').length === 4`, "the members")
		for _, m := range members {
			row := fmt.Sprintf(`tr[data-member=%q]`, m.Name)
			require.Equal(t, m.State, b.text(row+` .state`))
			require.Equal(t, m.HTTP, b.text(row+` td:nth-child(3)`))
		}
		require.Equal(t, "this node", b.text(`tr[data-member="node-a"] .self-chip`))
		b.waitText(`tr[data-member="node-a"] td[data-col="held"]`, "3") // orders 0, 1 and emails
		b.waitText(`tr[data-member="node-b"] td[data-col="held"]`, "2") // orders 2 and emails
		b.waitText(`tr[data-member="node-d"] td[data-col="held"]`, "1")
		for s, owner := range []string{"node-a", "node-a", "node-b", "node-d"} {
			cell := fmt.Sprintf(`.shard[data-queue="orders"][data-shard="%d"]`, s)
			b.waitFor(fmt.Sprintf(`document.querySelector('%s')?.dataset.owner === %q`, cell, owner), cell)
			title := eval[string](b, fmt.Sprintf(`document.querySelector('%s').title`, cell))
			require.Contains(t, title, "owner: "+owner)
			require.Regexp(t, `lease epoch: \d+`, title)
		}
		require.True(t, eval[bool](b, `document.querySelector('.shard[data-queue="orders"][data-shard="3"]').classList.contains('stale')`),
			"a lease held by a dead node stands out")
		require.True(t, eval[bool](b, `document.querySelector('.shard[data-queue="reports"][data-shard="0"]').classList.contains('unowned')`))
		require.Contains(t, b.text(`#epoch-legend`), "the last 4 digits of the lease epoch", "the short epochs are explained")
		// Epochs are Redis times in ms, 13 digits: a cell shows the last
		// four, fits them in, and has the whole epoch in its tooltip.
		owners, err := f.store.ShardOwners(f.ctx, "orders")
		require.NoError(t, err)
		for _, o := range owners {
			require.Greater(t, o.Epoch, int64(1e12), "an epoch is a time in ms")
			cell := fmt.Sprintf(`.shard[data-queue="orders"][data-shard="%d"]`, o.Shard)
			e := fmt.Sprint(o.Epoch)
			require.Equal(t, "…"+e[len(e)-4:], b.text(cell+` .shard-epoch`))
			require.Contains(t, eval[string](b, fmt.Sprintf(`document.querySelector('%s').title`, cell)), "lease epoch: "+e+" (taken ")
			require.True(t, eval[bool](b, fmt.Sprintf(`(c => c.scrollWidth <= c.clientWidth && c.querySelector('.shard-epoch').getBoundingClientRect().width <= c.getBoundingClientRect().width)(document.querySelector('%s'))`, cell)),
				"%s: the epoch fits its cell", cell)
		}
		b.screenshot("cluster")
		b.darkScreenshot("cluster-dark")

		// Live: a node takes a shard, the map follows.
		st, err := f.store.ShardOwners(f.ctx, "reports")
		require.NoError(t, err)
		require.Empty(t, st[0].Owner)
		f.acquire("reports", 0, "node-c")
		b.waitFor(`document.querySelector('.shard[data-queue="reports"][data-shard="0"]')?.dataset.owner === 'node-c'`, "the new lease")
	})

	step("morgue requeue", func(t *testing.T) {
		before := f.stats("orders")
		b.open("/queues/orders/morgue")
		b.waitFor(`document.querySelectorAll('.job.dead').length === 3`, "the morgue entries")
		require.Equal(t, "payment gateway timeout for dead-2", b.text(`.job[data-id="dead-2"] .job-error`))
		require.Equal(t, "{\n  \"sku\": 2\n}", b.text(`.job[data-id="dead-2"] pre.code`))
		b.waitText(`[data-tab="morgue"] .tab-count`, fmt.Sprint(before.MorgueLength))
		b.waitText(`[data-stat="length"] .qstat-value`, fmt.Sprint(before.Length))
		require.True(t, eval[bool](b, `document.querySelector('#requeue-selected').disabled`), "nothing selected yet")

		b.click(`input[data-select="dead-1"]`)
		b.waitText(`.sel-count`, "1 entry selected")
		b.screenshot("morgue")
		b.click(`#requeue-selected`)
		b.waitFor(`document.querySelector('#confirm-dialog')?.open`, "the confirmation")
		require.Contains(t, b.text(`#confirm-dialog h2`), "Requeue 1 entry")
		b.screenshot("morgue-confirm")
		b.click(`#confirm-ok`)
		b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Requeued 1 job')`, "the answer")

		// The page follows: the entry is gone, the counts moved.
		b.waitFor(`document.querySelectorAll('.job.dead').length === 2 && !document.querySelector('.job[data-id="dead-1"]')`, "the entry to leave")
		b.waitText(`[data-tab="morgue"] .tab-count`, fmt.Sprint(before.MorgueLength-1))
		b.waitText(`[data-stat="morgue_length"] .qstat-value`, fmt.Sprint(before.MorgueLength-1))
		b.waitText(`[data-stat="length"] .qstat-value`, fmt.Sprint(before.Length+1))
		b.waitText(`[data-tab="jobs"] .tab-count`, fmt.Sprint(before.Length+1))

		// And so did the store.
		after := f.stats("orders")
		require.Equal(t, before.MorgueLength-1, after.MorgueLength)
		require.Equal(t, before.Length+1, after.Length)
		info, err := f.store.GetJob(f.ctx, "orders", "dead-1")
		require.NoError(t, err)
		require.NotNil(t, info.Queued)
		require.Equal(t, persistence.FreshRetryCount, info.Queued.RetryCount)

		// Cancel changes nothing; delete all empties the morgue.
		b.click(`#delete-all`)
		b.click(`#confirm-cancel`)
		b.waitFor(`!document.querySelector('#confirm-dialog')`, "the dialog to close")
		require.EqualValues(t, 2, f.stats("orders").MorgueLength)
		b.click(`#delete-all`)
		require.Contains(t, b.text(`#confirm-dialog h2`), "Delete all 2 entries")
		b.click(`#confirm-ok`)
		b.waitText(`.empty-title`, "The morgue is empty")
		b.waitText(`[data-tab="morgue"] .tab-count`, "0")
		require.EqualValues(t, 0, f.stats("orders").MorgueLength)
	})

	step("queue actions", func(t *testing.T) {
		b.open("/queues/orders")
		b.waitFor(`document.querySelector('.job[data-id="retry-1"]')`, "the jobs")
		b.click(`button[data-action="kill_failed"]`)
		b.click(`#confirm-ok`)
		b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Killed 1 job: moved to the morgue')`, "the answer")
		b.waitFor(`!document.querySelector('.job[data-id="retry-1"]')`, "retry-1 to leave")
		b.waitText(`[data-tab="morgue"] .tab-count`, "1")
		require.EqualValues(t, 1, f.stats("orders").MorgueLength)
	})

	step("job actions and search", func(t *testing.T) {
		later := time.Now().Add(time.Hour)
		require.NoError(t, f.store.Enqueue(f.ctx, "orders", []persistence.NewJob{
			{ID: "act-1", Payload: []byte(`1`), PerformAt: later},
			{ID: "act-2", Payload: []byte(`2`), PerformAt: later},
		}))
		// Run now: the queued entry becomes due now.
		b.open("/queues/orders/job?id=act-1")
		b.waitFor(`document.querySelector('#perform-job')`, "the run-now button")
		b.click(`#perform-job`)
		b.click(`#confirm-ok`)
		b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Job act-1 is due now')`, "the answer")
		info, err := f.store.GetJob(f.ctx, "orders", "act-1")
		require.NoError(t, err)
		require.True(t, info.Queued.PerformAt.Before(later.Add(-time.Minute)), "act-1 is due now: %v", info.Queued.PerformAt)
		// Kill: to the morgue, with the error "killed".
		b.open("/queues/orders/job?id=act-2")
		b.click(`#kill-job`)
		b.click(`#confirm-ok`)
		// The id is only in the morgue now: the job page shows its entry.
		b.waitFor(`document.querySelector('[data-record="morgue"]')`, "the morgue entry")
		require.Contains(t, b.text(`[data-record="morgue"]`), "killed")
		require.Contains(t, b.text(`[data-record="morgue"]`), "first_at")
		require.Contains(t, b.text(`[data-record="queued"]`), "Not queued")
		b.screenshot("job-morgue")
		page, err := f.store.ListMorgue(f.ctx, "orders", persistence.ListOptions{Min: "act-2", Max: "act-2"})
		require.NoError(t, err)
		require.Len(t, page.Entries, 1)
		require.Equal(t, "killed", page.Entries[0].Error)

		// A long payload list shows its first five and a "Show all".
		var many []persistence.NewJob
		for i := range 12 {
			sc := float64(i)
			many = append(many, persistence.NewJob{ID: "many", Payload: []byte(fmt.Sprint(i)), Score: &sc})
		}
		require.NoError(t, f.store.Enqueue(f.ctx, "orders", many))
		b.open("/queues/orders/job?id=many")
		b.waitFor(`document.querySelectorAll('[data-record="queued"] .payload').length === 5`, "five payloads")
		require.Equal(t, "Show all 12 payloads", b.text(`[data-record="queued"] .show-all`))
		b.click(`[data-record="queued"] .show-all`)
		b.waitFor(`document.querySelectorAll('[data-record="queued"] .payload').length === 12 && !document.querySelector('.show-all')`, "all twelve")

		// Search by id: the ids that start with the text.
		b.open("/queues/orders")
		b.waitFor(`document.querySelector('.job[data-id="order-1"]')`, "the jobs")
		b.do(chromedp.SendKeys(chromedp.CSS(`#search`), "act\n"))
		b.waitFor(`location.search === '?idprefix=act' && document.querySelectorAll('.job').length === 1 && document.querySelector('.job[data-id="act-1"]')`, "act-1 alone")
		require.Contains(t, b.text(`#search-active`), `ids starting with "act"`)
		// Search over the last errors, in any case: no queued job failed
		// since the failed ones were killed; the morgue has them.
		b.open("/queues/orders")
		b.waitFor(`document.querySelector('.job[data-id="order-1"]')`, "the jobs")
		b.do(chromedp.SendKeys(chromedp.CSS(`#search`), "502 from INVENTORY"))
		b.click(`#search-errors`)
		b.waitFor(`new URLSearchParams(location.search).get('error') === '502 from INVENTORY'`, "the search")
		b.waitText(`.empty-title`, "No match")
		// The failed jobs: a job that failed and waits for its retry.
		require.NoError(t, f.store.RegisterQueue(f.ctx, persistence.QueueSpec{Name: "search", Shards: 1}))
		f.enqueue("search", persistence.NewJob{ID: "r-fail", Payload: []byte(`1`)}, persistence.NewJob{ID: "r-ok", Payload: []byte(`2`)})
		f.settleAll("search", 1, "node-a", func(id string) *persistence.Failure {
			if id != "r-fail" {
				return nil
			}
			return &persistence.Failure{ID: id, Error: "Disk FULL on report host", RetryAt: time.Now().Add(time.Hour)}
		}, 25)
		f.enqueue("search", persistence.NewJob{ID: "r-fresh", Payload: []byte(`3`)})
		b.open("/queues/search?error=disk+full")
		b.waitFor(`document.querySelectorAll('.job').length === 1 && document.querySelector('.job[data-id="r-fail"]')`, "the failed job")
		require.Contains(t, b.text(`#pager-text`), "1 searched")
		b.open("/queues/orders/morgue")
		b.waitFor(`document.querySelectorAll('.job.dead').length === 2`, "the morgue")
		b.do(chromedp.SendKeys(chromedp.CSS(`#search`), "502 from INVENTORY"))
		b.click(`#search-errors`)
		b.waitFor(`document.querySelectorAll('.job.dead').length === 1 && document.querySelector('.job.dead[data-id="retry-1"]')`, "the matching entry")
		require.Contains(t, b.text(`#pager-text`), "2 searched")
		b.screenshot("search")
		b.open("/queues/orders/morgue?error=KILLED")
		b.waitFor(`document.querySelectorAll('.job.dead').length === 1 && document.querySelector('.job.dead[data-id="act-2"]')`, "the killed entry")
		b.click(`#clear-search`)
		b.waitFor(`location.search === '' && document.querySelectorAll('.job.dead').length === 2`, "the search cleared")
	})

	step("pause and resume", func(t *testing.T) {
		b.open("/queues/orders")
		b.waitFor(`document.querySelector('.job')`, "the jobs")
		visible := func(sel string) bool {
			return eval[bool](b, `(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return !!e && e.offsetParent !== null; })()`)
		}
		require.False(t, visible(`#resume-queue`), "resume shows only while paused")
		b.click(`#pause-queue`)
		b.waitFor(`!document.querySelector('#queue-paused').hidden`, "the paused badge")
		require.True(t, f.stats("orders").Paused)
		b.waitFor(`document.querySelector('#resume-queue')?.offsetParent !== null && document.querySelector('#pause-queue').offsetParent === null`, "the resume button")
		// The sidebar marks the paused queue, and only it.
		b.waitFor(`document.querySelector('.nav-queue[data-queue="orders"] .nav-paused')`, "the sidebar's paused mark")
		require.Contains(t, eval[string](b, `document.querySelector('.nav-queue[data-queue="orders"] .nav-paused').title`), "Paused")
		require.Zero(t, eval[int](b, `document.querySelectorAll('.nav-queue:not([data-queue="orders"]) .nav-paused').length`))
		b.open("/")
		// Both rows come in one render: once the orders row shows its badge,
		// the emails row is there, without one.
		b.waitFor(`document.querySelector('tr[data-queue="orders"] .badge.paused')?.hidden === false`, "the overview's paused badge")
		require.True(t, eval[bool](b, `document.querySelector('tr[data-queue="emails"] .badge.paused')?.hidden === true`))
		b.open("/queues/orders")
		b.click(`#resume-queue`)
		b.waitFor(`document.querySelector('#queue-paused').hidden`, "the badge to go")
		b.waitFor(`!document.querySelector('.nav-paused')`, "the sidebar's mark to go")
		require.False(t, f.stats("orders").Paused)
	})

	step("finished", func(t *testing.T) {
		// A queue with retain_finished keeps its acknowledged ids
		// (docs/contract.md §3.14): the Finished tab lists them, the job
		// page shows one with its result.
		require.NoError(t, f.store.RegisterQueue(f.ctx, persistence.QueueSpec{Name: "receipts", Shards: 1}))
		f.enqueue("receipts", job("rcpt-1", `1`, 0), job("rcpt-2", `2`, 0))
		lease, _, err := f.store.AcquireShard(f.ctx, persistence.ShardRef{Queue: "receipts"}, "node-a", time.Minute)
		require.NoError(t, err)
		_, err = f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, RetainFinished: time.Hour})
		require.NoError(t, err)
		_, err = f.store.Advance(f.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, RetainFinished: time.Hour,
			Results: map[string][]byte{"rcpt-1": []byte(`{"receipt":"r-981"}`)}})
		require.NoError(t, err)
		require.NoError(t, f.store.ReleaseShard(f.ctx, lease))

		b.open("/queues/receipts/finished")
		b.waitFor(`document.querySelectorAll('.job.finished').length === 2`, "the finished ids")
		require.Contains(t, b.text(`.job.finished[data-id="rcpt-1"] .finished-result`), `"receipt": "r-981"`)
		require.Contains(t, b.text(`.job.finished[data-id="rcpt-2"]`), "No result set")
		require.Equal(t, "finished", eval[string](b, `document.querySelector('.tab.active').dataset.tab`))
		b.screenshot("finished")
		// Searched by id: the ids from the one typed on, by id.
		b.do(chromedp.SendKeys(chromedp.CSS(`#finished-from`), "rcpt-2\n"))
		b.waitFor(`location.search.includes('order=id') && location.search.includes('from=rcpt-2')`, "the by-id listing")
		b.waitFor(`document.querySelectorAll('.job.finished').length === 1 && document.querySelector('.job.finished').dataset.id === 'rcpt-2'`, "the ids from rcpt-2 on")
		require.Contains(t, eval[string](b, `document.querySelector('#finished-by-id').className`), "active")
		b.click(`#finished-by-id`)
		b.waitFor(`document.querySelectorAll('.job.finished').length === 2 && document.querySelector('.job.finished').dataset.id === 'rcpt-1'`, "every finished id by id")
		b.open("/queues/receipts/job?id=rcpt-1")
		b.waitFor(`document.querySelector('[data-record="finished"]')`, "the finished record")
		require.Contains(t, b.text(`[data-record="finished"]`), "r-981")
		require.Contains(t, b.text(`[data-record="finished"]`), "1 attempt")
	})

	step("stateful job", func(t *testing.T) {
		f.fillStateful()
		// Processed: the state and the timer remain, and the page says so.
		b.open("/queues/accounts/job?id=acct-1")
		b.waitFor(`document.querySelector('[data-record="state"]')`, "the state panel")
		require.Contains(t, b.text(`[data-record="state"] pre.state-value`), `"status": "paid"`)
		require.Contains(t, b.text(`[data-record="state"] pre.state-value`), `"total": 42.5`)
		require.Contains(t, b.text(`[data-record="state"] .kv`), "version1")
		require.Regexp(t, `^in (29m|30m)`, b.text(`[data-record="state"] .state-timer .time-rel`))
		require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, b.text(`[data-record="state"] .state-timer .time-abs`))
		require.Contains(t, b.text(`#state-remains`), "its state remains")
		require.Contains(t, b.text(`[data-record="queued"]`), "Not queued")
		b.screenshot("job-state")

		// Bytes that are not JSON: base64 and the length; queued, so no note.
		b.open("/queues/accounts/job?id=acct-2")
		b.waitFor(`document.querySelector('[data-record="state"]')`, "the state panel")
		require.Equal(t, "AAEC/w==", b.text(`[data-record="state"] pre.state-value`))
		require.Contains(t, b.text(`[data-record="state"] .payload-kind`), "binary · 4 bytes · base64")
		require.Contains(t, b.text(`[data-record="state"] .kv`), "timernone")
		require.Zero(t, eval[int](b, `document.querySelectorAll('#state-remains').length`))
		require.Contains(t, b.text(`[data-record="queued"] pre.code`), `"event": "created"`)

		// A long state: its start, then all of it on demand.
		b.open("/queues/accounts/job?id=acct-big")
		b.waitFor(`document.querySelector('#state-show-all')`, "the show-all button")
		short := eval[int](b, `document.querySelector('pre.state-value').textContent.length`)
		b.click(`#state-show-all`)
		b.waitFor(`!document.querySelector('#state-show-all')`, "the whole state")
		require.Greater(t, eval[int](b, `document.querySelector('pre.state-value').textContent.length`), short)
		require.True(t, eval[bool](b, `JSON.parse(document.querySelector('pre.state-value').textContent).lines.length === 1500`))

		// A deleted state keeps its version and shows no bytes.
		b.open("/queues/accounts/job?id=acct-del")
		b.waitFor(`document.querySelector('[data-record="state"]')`, "the state panel")
		require.Contains(t, b.text(`[data-record="state"] .kv`), "version2 (state deleted)")
		require.Zero(t, eval[int](b, `document.querySelectorAll('[data-record="state"] pre, #state-remains').length`))
		require.Contains(t, b.text(`[data-record="queued"] pre.code`), `"event": "reopened"`)

		// A queue that is not stateful shows no state panel.
		b.open("/queues/orders/job?id=order-1")
		b.waitText(`.job-id-big`, "order-1")
		require.Zero(t, eval[int](b, `document.querySelectorAll('[data-record="state"]').length`))
	})

	step("errors", func(t *testing.T) {
		// An unknown queue: the API's 404 says so.
		b.open("/queues/nope")
		b.waitFor(`document.querySelector('[data-banner="jobs"]')`, "the banner")
		require.Contains(t, b.text(`[data-banner="jobs"]`), `404 Not found: unknown queue "nope"`)
		// A page that does not exist.
		b.open("/no/such/page")
		b.waitText(`.empty-title`, "Page not found")
		// Redis goes away: the API's 503 and its message are on the banner,
		// until it comes back.
		b.open("/")
		b.waitFor(`document.querySelector('.live').dataset.state === 'live'`, "live")
		f.outage.Store(true)
		b.waitFor(`document.querySelector('[data-banner="queues"]')`, "the banner")
		require.Equal(t, "Could not load queues. 503 Service unavailable: store unavailable; retry later", b.text(`[data-banner="queues"]`))
		require.Equal(t, "Error", b.text(`.live`))
		b.screenshot("error")
		f.outage.Store(false)
		b.waitFor(`!document.querySelector('[data-banner="queues"]') && document.querySelector('.live').dataset.state === 'live'`, "the recovery")
		// The node goes away: the banner says so and the indicator turns red.
		f.ts.CloseClientConnections()
		f.ts.Config.SetKeepAlivesEnabled(false)
		f.ts.Listener.Close()
		b.waitFor(`document.querySelector('.live').dataset.state === 'down'`, "the indicator to turn red")
		require.Contains(t, b.text(`[data-banner="queues"]`), "Network error")
	})
}

// TestBrowserToken: with a token, the dashboard asks for it, refuses a
// wrong one, and shows the data once it has the right one.
func TestBrowserToken(t *testing.T) {
	chromium(t)
	f := newFixture(t, "s3cret")
	b := newBrowser(t, f.ts.URL)

	b.open("/queues/orders/morgue")
	b.waitFor(`document.querySelector('#token-dialog')?.open`, "the token prompt")
	require.Equal(t, 0, eval[int](b, `document.querySelectorAll('.job').length`), "no data without the token")
	b.screenshot("token")
	b.do(chromedp.SendKeys(chromedp.CSS(`#token-input`), "wrong"))
	b.click(`#token-submit`)
	b.waitFor(`document.querySelector('#token-dialog')?.open && document.querySelector('#token-dialog .form-error')`, "the token to be refused")
	require.Equal(t, "That token was refused. Try again.", b.text(`#token-dialog .form-error`))
	b.do(chromedp.SendKeys(chromedp.CSS(`#token-input`), "s3cret"))
	b.click(`#token-submit`)
	b.waitFor(`document.querySelectorAll('.job.dead').length === 3`, "the morgue entries")
	b.waitText(`.self-name`, "node-a")
	require.Equal(t, "s3cret", eval[string](b, `sessionStorage.getItem('orderly.token')`))

	// Reloads keep the token for the tab; actions send it too.
	b.open("/queues/orders/morgue")
	b.waitFor(`document.querySelectorAll('.job.dead').length === 3`, "the morgue after a reload")
	require.False(t, eval[bool](b, `!!document.querySelector('#token-dialog')`))
	b.click(`input[data-select="dead-3"]`)
	b.click(`#delete-selected`)
	b.click(`#confirm-ok`)
	b.waitFor(`document.querySelectorAll('.job.dead').length === 2`, "the entry to go")
	require.EqualValues(t, 2, f.stats("orders").MorgueLength)

	// Forgetting the token brings the prompt back.
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`.signout`))))
	require.NoError(t, err, "sign-out reloads the page")
	b.waitFor(`document.querySelector('#token-dialog')?.open`, "the prompt after sign-out")
}

// With the read-only token, the dashboard shows every view and hides every
// action that changes state; with the full token, they are back.
func TestBrowserReadToken(t *testing.T) {
	chromium(t)
	f := newFixtureTokens(t, "full-tok", "read-tok", true)
	b := newBrowser(t, f.ts.URL)
	visible := func(sel string) bool {
		return eval[bool](b, `(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return !!e && e.offsetParent !== null; })()`)
	}

	b.open("/queues/orders")
	b.waitFor(`document.querySelector('#token-dialog')?.open`, "the token prompt")
	b.do(chromedp.SendKeys(chromedp.CSS(`#token-input`), "read-tok"))
	b.click(`#token-submit`)
	b.waitFor(`document.querySelectorAll('.job').length > 0`, "the jobs")
	b.waitFor(`document.body.classList.contains('read-only') && !document.body.classList.contains('access-unknown')`, "the read-only mode")
	require.True(t, visible(`#read-only`), "the read-only chip")
	b.waitFor(`!document.querySelector('#embedded-store').hidden`, "the in-memory store notice")
	require.Contains(t, b.text(`#embedded-store`), "jobs are lost when it stops")
	require.Positive(t, eval[int](b, `document.querySelectorAll('[data-action]').length`), "the actions exist")
	for _, sel := range []string{`[data-action="perform_all_now"]`, `[data-action="delete_failed"]`, `[data-delete]`, `#pause-queue`, `#resume-queue`,
		`#kill-selected`, `input[data-select]`} {
		require.False(t, visible(sel), "%s is hidden", sel)
	}
	b.screenshot("read-only")

	// The job page: run now, kill and delete are hidden; the search works.
	b.open("/queues/orders/job?id=order-1")
	b.waitText(`.job-id-big`, "order-1")
	b.waitFor(`document.body.classList.contains('read-only')`, "the read-only mode on the job page")
	require.Equal(t, 3, eval[int](b, `document.querySelectorAll('#perform-job, #kill-job, #delete-job').length`), "the actions exist")
	for _, sel := range []string{`#perform-job`, `#kill-job`, `#delete-job`} {
		require.False(t, visible(sel), "%s is hidden", sel)
	}
	b.open("/queues/orders?idprefix=order-")
	b.waitFor(`document.querySelectorAll('.job').length > 0 && [...document.querySelectorAll('.job')].every(e => e.dataset.id.startsWith('order-'))`, "the search with read access")

	// A stateful id's state, version and timer show with read access.
	f.fillStateful()
	b.open("/queues/accounts/job?id=acct-1")
	b.waitFor(`document.querySelector('[data-record="state"]')`, "the state panel with read access")
	require.Contains(t, b.text(`[data-record="state"] pre.state-value`), `"status": "paid"`)
	require.Contains(t, b.text(`[data-record="state"] .kv`), "version1")
	require.Regexp(t, `in (29m|30m)`, b.text(`[data-record="state"] .state-timer`))
	require.Contains(t, b.text(`#state-remains`), "its state remains")

	b.open("/queues/orders/morgue")
	b.waitFor(`document.querySelectorAll('.job.dead').length === 3`, "the morgue entries")
	b.waitFor(`document.body.classList.contains('read-only')`, "the read-only mode after a reload")
	for _, sel := range []string{`#delete-all`, `#requeue-all`, `#requeue-selected`, `input[data-select]`} {
		require.False(t, visible(sel), "%s is hidden", sel)
	}

	// The full token shows the actions.
	eval[bool](b, `(sessionStorage.setItem('orderly.token', 'full-tok'), true)`)
	b.open("/queues/orders/morgue")
	b.waitFor(`document.querySelectorAll('.job.dead').length === 3`, "the morgue with the full token")
	b.waitFor(`!document.body.classList.contains('read-only') && !document.body.classList.contains('access-unknown')`, "the full access")
	require.True(t, visible(`#delete-all`))
	require.False(t, visible(`#read-only`))
}

// The jobs tab: a compact table (one line a job) kept across reloads, and
// run now, kill and delete of the selected jobs, as in the morgue.
func TestBrowserJobsTableAndSelection(t *testing.T) {
	chromium(t)
	f := newFixture(t, "")
	b := newBrowser(t, f.ts.URL)

	b.open("/queues/orders")
	b.waitFor(`document.querySelectorAll('.job').length === 10`, "the cards")
	cardHeight := eval[float64](b, `document.querySelector('.job[data-id="order-1"]').getBoundingClientRect().height`)
	b.click(`#jobs-view [data-view="table"]`)
	b.waitFor(`document.querySelectorAll('table.jobs-table tr.job-row').length === 10 && !document.querySelector('.job')`, "the table")
	rowHeight := eval[float64](b, `document.querySelector('tr.job-row[data-id="order-1"]').getBoundingClientRect().height`)
	require.Less(t, rowHeight, 48.0, "a job is one line")
	require.Less(t, rowHeight*3, cardHeight, "a row is far smaller than a card (%v px against %v px)", rowHeight, cardHeight)
	require.Equal(t, "HTTP 502 from inventory", b.text(`tr.job-row[data-id="retry-1"] .error-cell`))
	require.Equal(t, `{"sku":42,"qty":2}`, b.text(`tr.job-row[data-id="order-1"] .preview`))
	b.screenshot("jobs-table")
	// The choice survives a reload.
	b.open("/queues/orders")
	b.waitFor(`document.querySelectorAll('tr.job-row').length === 10`, "the table after a reload")
	require.Equal(t, "true", eval[string](b, `document.querySelector('#jobs-view [data-view="table"]').getAttribute('aria-pressed')`))

	// Kill two selected jobs.
	require.True(t, eval[bool](b, `document.querySelector('#kill-selected').disabled`), "nothing selected yet")
	b.click(`tr.job-row[data-id="order-1"] input[data-select]`)
	b.click(`tr.job-row[data-id="order-2"] input[data-select]`)
	b.waitText(`.sel-count`, "2 jobs selected")
	require.True(t, eval[bool](b, `document.querySelector('tr.job-row[data-id="order-2"]').classList.contains('selected')`))
	b.click(`#kill-selected`)
	require.Equal(t, "Kill 2 selected jobs of orders?", b.text(`#confirm-dialog h2`))
	b.click(`#confirm-ok`)
	b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Killed 2 jobs')`, "the answer")
	b.waitFor(`document.querySelectorAll('tr.job-row').length === 8`, "the killed jobs to leave")
	page, err := f.store.ListMorgue(f.ctx, "orders", persistence.ListOptions{Min: "order-1", Max: "order-2"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 2)
	require.Equal(t, "Select jobs to act on them", b.text(`.sel-count`))

	// Run now: the job due in an hour becomes due.
	b.click(`tr.job-row[data-id="later-1"] input[data-select]`)
	b.click(`#perform-selected`)
	b.click(`#confirm-ok`)
	b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Made 1 job due now')`, "the answer")
	info, err := f.store.GetJob(f.ctx, "orders", "later-1")
	require.NoError(t, err)
	require.True(t, info.Queued.PerformAt.Before(time.Now().Add(time.Minute)), "later-1 is due now: %v", info.Queued.PerformAt)

	// Select every job of a page (the id ".." cannot be sent, and is
	// left out), and delete them; one was deleted meanwhile: it is counted
	// as no longer queued.
	b.open("/queues/orders?idprefix=b")
	b.waitFor(`document.querySelectorAll('tr.job-row').length === 2`, "big-1 and bin-1")
	b.click(`#select-all`)
	b.waitText(`.sel-count`, "2 jobs selected")
	ok, err := f.store.DeleteJob(f.ctx, "orders", "bin-1")
	require.NoError(t, err)
	require.True(t, ok)
	b.click(`#delete-selected`)
	b.click(`#confirm-ok`)
	b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Deleted 1 job; 1 job no longer queued')`, "the answer")
	_, err = f.store.GetJob(f.ctx, "orders", "big-1")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	b.open("/queues/orders?order=id&min=..&max=..")
	b.waitFor(`document.querySelectorAll('tr.job-row').length === 1`, "the id ..")
	require.True(t, eval[bool](b, `document.querySelector('tr.job-row input[data-select]').disabled`))
	b.click(`#select-all`)
	require.Equal(t, "Select jobs to act on them", b.text(`.sel-count`))

	// Back to cards: they have checkboxes too.
	b.click(`#jobs-view [data-view="cards"]`)
	b.waitFor(`document.querySelectorAll('.job input[data-select]').length === 1`, "the cards")
}

// The overview's charts draw the node's per-minute history: half an hour
// of it shows at once, survives a reload, and the range picks how much.
func TestBrowserChartsHistory(t *testing.T) {
	chromium(t)
	f := newFixture(t, "")
	// Half an hour up to this minute: orders processed 120 and failed 6 a
	// minute (2/s and 0.1/s), with a lag of 42 s.
	now := time.Now()
	for i := range 31 {
		at := now.Add(time.Duration(i-30) * time.Minute)
		require.NoError(t, f.history.RecordAt(f.ctx, at, []persistence.QueueStats{
			{Name: "orders", Processed: int64(i) * 120, Failed: int64(i) * 6, Length: 10, Lag: 42}}))
	}
	b := newBrowser(t, f.ts.URL)
	points := func(chart int) int {
		return eval[int](b, fmt.Sprintf(`(document.querySelectorAll('.charts .line.s0')[%d]?.getAttribute('d') || '').split(/[ML]/).length - 1`, chart))
	}
	readout := func(x string) string {
		b.do(chromedp.Evaluate[chromedp.Void](`(() => {
			const o = document.querySelectorAll('.charts .overlay')[1], r = o.getBoundingClientRect();
			o.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width * ` + x + `, clientY: r.top + 5, bubbles: true}));
		})()`))
		b.waitFor(`(t => t && !t.hidden)(document.querySelectorAll('.chart-tip')[1])`, "the readout")
		return eval[string](b, `document.querySelectorAll('.chart-tip')[1].innerText`)
	}
	for _, visit := range []string{"first", "after a reload"} {
		b.open("/")
		b.waitFor(`document.querySelectorAll('.charts .line.s0').length === 2`, "the charts "+visit)
		b.waitFor(`(document.querySelectorAll('.charts .line.s0')[1].getAttribute('d') || '').split('L').length >= 30`, "half an hour of throughput "+visit)
		require.GreaterOrEqual(t, points(0), 31, "half an hour of lag")
		require.Equal(t, "true", eval[string](b, `document.querySelector('#chart-range [data-range="1h"]').getAttribute('aria-pressed')`))
		tip := readout("0.3")
		require.Regexp(t, `processed/s\s*2\b`, tip)
		require.Regexp(t, `failed/s\s*0\.1\b`, tip)
	}
	b.screenshot("overview-history")
	// Five minutes: the history's last five, then what the page polled.
	b.click(`#chart-range [data-range="5m"]`)
	b.waitFor(`(document.querySelectorAll('.charts .line.s0')[0].getAttribute('d') || '').split(/[ML]/).length - 1 <= 12`, "five minutes")
	b.click(`#chart-range [data-range="24h"]`)
	b.waitFor(`(document.querySelectorAll('.charts .line.s0')[0].getAttribute('d') || '').split(/[ML]/).length - 1 >= 31`, "the day")
}

// Under a base path, the dashboard loads, routes, links and calls the API
// below it: no request of the browser leaves it.
func TestBrowserBasePath(t *testing.T) {
	chromium(t)
	const base = "/ops/orderly"
	var mu sync.Mutex
	var outside []string
	f := newFixtureTokens(t, "", "", false, fixtureOption{
		config: func(c *web.Config) {
			c.BasePath = base
			c.UI = ui.HandlerAt(base)
		},
		wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != base && !strings.HasPrefix(r.URL.Path, base+"/") {
					mu.Lock()
					outside = append(outside, r.URL.Path)
					mu.Unlock()
				}
				h.ServeHTTP(w, r)
			})
		},
	})
	b := newBrowser(t, f.ts.URL)

	b.open(base)
	b.waitFor(`document.querySelector('tr[data-queue="orders"]')`, "the queues table")
	b.waitFor(`document.querySelector('.live').dataset.state === 'live'`, "the live indicator")
	b.waitText(`.self-name`, "node-a")
	require.True(t, eval[bool](b, `document.querySelector('.nav-link[data-nav="overview"]').classList.contains('active')`))
	b.waitFor(`document.querySelectorAll('.charts .line.s0').length === 2`, "the charts")
	// Links stay below the base path, and navigate without a reload.
	b.click(`.nav-queue[data-queue="orders"]`)
	b.waitFor(`location.pathname === '`+base+`/queues/orders'`, "the queue page")
	b.waitFor(`document.querySelectorAll('.job').length === 10`, "the jobs")
	require.True(t, eval[bool](b, `document.querySelector('.nav-queue[data-queue="orders"]').classList.contains('active')`))
	b.click(`.job[data-id="order-1"] a.job-id`)
	b.waitText(`.job-id-big`, "order-1")
	require.Equal(t, base+"/queues/orders/job", eval[string](b, `location.pathname`))
	// An action goes through the API below the base path.
	b.click(`#perform-job`)
	b.click(`#confirm-ok`)
	b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Job order-1 is due now')`, "the answer")
	// Deep links and reloads.
	b.open(base + "/queues/orders/morgue")
	b.waitFor(`document.querySelectorAll('.job.dead').length === 3`, "the morgue")
	b.open(base + "/cluster")
	b.waitFor(`document.querySelectorAll('tr[data-member]').length === 4`, "the members")
	require.Equal(t, "http://10.0.0.2:8080"+base+"/", eval[string](b, `document.querySelector('tr[data-member="node-b"] td:nth-child(3) a').href`))
	b.click(`.brand`)
	b.waitFor(`location.pathname === '`+base+`/' && document.querySelector('tr[data-queue="orders"]')`, "the overview")
	b.open(base + "/no/such/page")
	b.waitText(`.empty-title`, "Page not found")

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, outside, "every request of the browser is below %s", base)
}
