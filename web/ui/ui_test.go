package ui_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/ui"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// staticFS is the source tree of the embedded files.
var staticFS = os.DirFS("static")

type answer struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, h http.Handler, method, target string, headers ...string) answer {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

func readStatic(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(staticFS, name)
	require.NoError(t, err)
	return string(b)
}

// Every path that is not an asset is a route of the app: it gets the shell,
// so deep links and reloads work.
func TestShellForDeepLinks(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	shell := readStatic(t, "index.html")
	for _, target := range []string{
		"/", "/cluster", "/queues/orders", "/queues/orders/", "/queues/orders/morgue?order=updated_at&dir=desc",
		"/queues/orders/processing", "/queues/orders/job?id=a%2Fb", "/queues/orders/jobs/%2E%2E",
		"/no/such/page", "/favicon.ico", "/index.html", "/assetsx/app.js",
	} {
		a := get(t, h, "GET", target)
		require.Equal(t, http.StatusOK, a.status, target)
		require.Equal(t, shell, a.body, target)
		require.Equal(t, "text/html; charset=utf-8", a.header.Get("Content-Type"), target)
		require.Equal(t, "no-cache", a.header.Get("Cache-Control"), target)
		require.Equal(t, ui.ContentSecurityPolicy, a.header.Get("Content-Security-Policy"), target)
		require.Equal(t, "DENY", a.header.Get("X-Frame-Options"), target)
		require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"), target)
		require.NotEmpty(t, a.header.Get("ETag"), target)
	}
	// The shell loads the app from absolute paths, so that it works at any depth.
	require.Contains(t, shell, `src="/assets/app.js"`)
	require.Contains(t, shell, `href="/assets/app.css"`)
}

func TestAssets(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	types := map[string]string{
		".js":  "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8",
		".svg": "image/svg+xml",
	}
	entries, err := fs.ReadDir(staticFS, "assets")
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	total := 0
	for _, e := range entries {
		want := readStatic(t, "assets/"+e.Name())
		total += len(want)
		target := "/assets/" + e.Name()
		a := get(t, h, "GET", target)
		require.Equal(t, http.StatusOK, a.status, target)
		require.Equal(t, want, a.body, target)
		ctype, ok := types[path.Ext(e.Name())]
		require.True(t, ok, "unexpected asset type %s", e.Name())
		require.Equal(t, ctype, a.header.Get("Content-Type"), target)
		require.Equal(t, "no-cache", a.header.Get("Cache-Control"), target)
		require.Empty(t, a.header.Get("Content-Security-Policy"), "only the shell needs the policy")

		// Revalidation: the ETag answers 304 until the content changes.
		etag := a.header.Get("ETag")
		require.Regexp(t, `^"[0-9a-f]{24}"$`, etag)
		a = get(t, h, "GET", target, "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, a.status, target)
		require.Empty(t, a.body)
		a = get(t, h, "GET", target, "If-None-Match", `"stale"`)
		require.Equal(t, http.StatusOK, a.status, target)

		a = get(t, h, "HEAD", target)
		require.Equal(t, http.StatusOK, a.status, target)
		require.Empty(t, a.body)
		require.Equal(t, ctype, a.header.Get("Content-Type"), target)
	}
	// Small enough to load instantly from a laptop on the other side of the world.
	require.Less(t, total, 200<<10, "the assets weigh %d bytes", total)
}

func TestMissingAssetsAre404(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	for _, target := range []string{"/assets/missing.js", "/assets/", "/assets", "/assets/sub/app.js", "/assets/APP.JS"} {
		a := get(t, h, "GET", target)
		require.Equal(t, http.StatusNotFound, a.status, target)
		require.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"), target)
		require.NotContains(t, a.body, "<html", "a missing asset never gets the shell: %s", target)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		for _, target := range []string{"/", "/assets/app.js"} {
			a := get(t, h, m, target)
			require.Equal(t, http.StatusMethodNotAllowed, a.status, "%s %s", m, target)
			require.Equal(t, "GET, HEAD", a.header.Get("Allow"))
		}
	}
}

// importRE finds the static imports of a module.
var importRE = regexp.MustCompile(`(?m)^(?:import|export)\s[^;]*?from\s+'(\./[^']+)'`)

// Every file the shell and the modules refer to exists: a typo would only
// show up in a browser otherwise.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	shell := readStatic(t, "index.html")
	for _, m := range regexp.MustCompile(`(?:src|href)="(/[^"]*)"`).FindAllStringSubmatch(shell, -1) {
		_, err := fs.Stat(staticFS, strings.TrimPrefix(m[1], "/"))
		require.NoError(t, err, "index.html refers to %s", m[1])
	}
	entries, err := fs.ReadDir(staticFS, "assets")
	require.NoError(t, err)
	imported := map[string]bool{"app.js": true}
	for _, e := range entries {
		if path.Ext(e.Name()) != ".js" {
			continue
		}
		src := readStatic(t, "assets/"+e.Name())
		for _, m := range importRE.FindAllStringSubmatch(src, -1) {
			_, err := fs.Stat(staticFS, "assets/"+strings.TrimPrefix(m[1], "./"))
			require.NoError(t, err, "%s imports %s", e.Name(), m[1])
			imported[strings.TrimPrefix(m[1], "./")] = true
		}
	}
	for _, e := range entries {
		if path.Ext(e.Name()) == ".js" {
			require.True(t, imported[e.Name()], "%s is never imported", e.Name())
		}
	}
}

// Ids, errors and payloads are hostile input: the app renders them as text.
// Nothing may parse strings as HTML or code, and nothing may reach out to
// another origin.
func TestAssetsAreSafe(t *testing.T) {
	t.Parallel()
	forbidden := []string{".innerHTML", ".outerHTML", "insertAdjacentHTML(", "document.write", "eval(", "new Function(",
		"setTimeout('", `setTimeout("`, "javascript:", "localStorage", "DOMParser", "createContextualFragment"}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	entries, err := fs.ReadDir(staticFS, "assets")
	require.NoError(t, err)
	for _, e := range append(entries, nil) {
		name := "index.html"
		if e != nil {
			name = "assets/" + e.Name()
		}
		src := readStatic(t, name)
		for _, f := range forbidden {
			require.False(t, strings.Contains(src, f), "%s uses %s", name, f)
		}
		for _, m := range external.FindAllString(src, -1) {
			require.Equal(t, "http://www.w3.org", m, "%s refers to another origin: %s", name, m)
		}
	}
}

// Through the API server: the dashboard's files need no token and hold no
// data; the data needs the token.
func TestServedByTheAPI(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, store.RegisterQueue(ctx, persistence.QueueSpec{Name: "secret-queue", Shards: 2}))
	require.NoError(t, store.Enqueue(ctx, "secret-queue", []persistence.NewJob{{ID: "secret-id", Payload: []byte(`"secret-payload"`)}}))
	srv, err := web.New(&web.Config{Store: store, Token: "s3cret", UI: ui.Handler()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	fetch := func(p string, headers ...string) answer {
		req, err := http.NewRequest("GET", ts.URL+p, nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := ts.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return answer{status: res.StatusCode, header: res.Header, body: string(b)}
	}
	paths := []string{"/", "/queues/secret-queue", "/queues/secret-queue/job?id=secret-id", "/cluster"}
	entries, err := fs.ReadDir(staticFS, "assets")
	require.NoError(t, err)
	for _, e := range entries {
		paths = append(paths, "/assets/"+e.Name())
	}
	for _, p := range paths {
		a := fetch(p)
		require.Equal(t, http.StatusOK, a.status, p)
		for _, secret := range []string{"secret-queue", "secret-id", "secret-payload", "s3cret"} {
			require.NotContains(t, a.body, secret, "%s holds data", p)
		}
	}
	a := fetch("/assets/missing.js")
	require.Equal(t, http.StatusNotFound, a.status)
	a = fetch("/api/v1/queues")
	require.Equal(t, http.StatusUnauthorized, a.status)
	a = fetch("/api/v1/queues", "Authorization", "Bearer s3cret")
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.body, "secret-queue")
}
