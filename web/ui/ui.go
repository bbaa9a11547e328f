// Package ui is Orderly's dashboard: a single-page web app, embedded in the
// binary, that operators use to watch queues and act on them.
//
// Handler serves it (HandlerAt under a base path, web.Config.BasePath).
// Mount it as web.Config.UI: the API server hands it
// GET and HEAD of every path outside /api/, /metrics and the probes, without
// the bearer token, so the files here are static and hold no data. The
// app reads everything through the JSON API (package web).
//
// The files are plain ES modules and CSS under static/, with no build step
// and no network access at run time (no CDN, no web fonts):
//
//	/assets/*        the app's files; 404 when there is no such file
//	/ and any other  the app shell (index.html), so that deep links and
//	                 reloads work
//
// The app routes on location.pathname (History API):
//
//	/                          overview: totals, lag and throughput charts, queues
//	/queues/{q}                queued jobs: order, direction, range, cursor paging
//	/queues/{q}/processing     in-flight batches per shard, with their owner
//	/queues/{q}/morgue         morgue entries, selection, requeue and delete
//	/queues/{q}/job?id={id}    one job, queued and in flight
//	/cluster                   members and the shard map
//
// Listing state lives in the query (order, dir, min, max, cursor, page,
// limit), so a filtered page is a link. A job's id travels in the query
// rather than the path: browsers resolve the path segments "." and ".."
// (even escaped as %2E) before a request leaves, a query value they keep.
//
// When the API answers 401, the app asks for the token, keeps it in
// sessionStorage (this tab only) and sends it as "Authorization: Bearer" on
// every call, retrying the calls that were refused.
//
// Every answer carries Cache-Control: no-cache and a strong ETag (a hash of
// the content), so a browser revalidates each file and gets 304 Not
// Modified until the binary changes: no stale app after an upgrade, and no
// build step to fingerprint file names. The shell also carries a strict
// Content-Security-Policy (scripts, styles and API calls from this origin
// only, no inline script), a second line of defence behind the app's rule
// of rendering ids, errors and payloads as text, never as HTML.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// AssetsPrefix is the path under which the app's files are served.
const AssetsPrefix = "/assets/"

// ContentSecurityPolicy is the policy of the app shell. The app loads
// nothing from other origins and runs no inline script or style.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; manifest-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	data  []byte
	ctype string
	etag  string
}

// handler serves the shell and the assets.
type handler struct {
	shell  *asset
	assets map[string]*asset // by path below AssetsPrefix
}

// contentTypes are the types of the app's files; the system's MIME table
// is not consulted, so the answer does not depend on the host.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
	".png":  "image/png",
}

// Handler returns the dashboard's http.Handler. It holds the embedded files
// in memory and is safe for concurrent use.
func Handler() http.Handler { return HandlerAt("") }

// HandlerAt returns the dashboard's http.Handler for a dashboard the
// browser reaches under basePath ("/orderly"; "" for the root), as
// web.Config.BasePath serves it: the handler gets the paths below it
// (/assets/app.js), while the shell names its files under it
// (/orderly/assets/app.js), and the app finds its routes and the API there.
func HandlerAt(basePath string) http.Handler {
	h := &handler{assets: map[string]*asset{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		a := newAsset(p, data)
		switch rel := strings.TrimPrefix(p, "static/"); {
		case rel == "index.html":
			h.shell = newAsset(p, underBase(data, basePath))
		case strings.HasPrefix(rel, "assets/"):
			h.assets[strings.TrimPrefix(rel, "assets/")] = a
		}
		return nil
	})
	if err != nil || h.shell == nil {
		// The files are compiled in: this cannot happen in a built binary.
		panic("ui: embedded files are missing: " + errString(err))
	}
	return h
}

// underBase rewrites the shell's links to the app's files (the attributes
// that start with /assets/) to be under basePath.
func underBase(shell []byte, basePath string) []byte {
	for _, attr := range []string{`href="`, `src="`} {
		shell = bytes.ReplaceAll(shell, []byte(attr+AssetsPrefix), []byte(attr+basePath+AssetsPrefix))
	}
	return shell
}

func errString(err error) string {
	if err == nil {
		return "no index.html"
	}
	return err.Error()
}

func newAsset(name string, data []byte) *asset {
	sum := sha256.Sum256(data)
	ctype, ok := contentTypes[path.Ext(name)]
	if !ok {
		ctype = mime.TypeByExtension(path.Ext(name))
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return &asset{data: data, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr.Set("X-Content-Type-Options", "nosniff")
	p := r.URL.Path
	if p == strings.TrimSuffix(AssetsPrefix, "/") || strings.HasPrefix(p, AssetsPrefix) {
		a := h.assets[strings.TrimPrefix(p, AssetsPrefix)]
		if a == nil {
			// A missing script must not get the shell: the browser would
			// report a MIME error instead of the 404 it is.
			hdr.Set("Cache-Control", "no-cache")
			http.Error(w, "no such file: "+p, http.StatusNotFound)
			return
		}
		serve(w, r, a)
		return
	}
	// Every other path is a route of the app.
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	serve(w, r, h.shell)
}

// serve writes a, answering conditional requests (If-None-Match) and HEAD.
func serve(w http.ResponseWriter, r *http.Request, a *asset) {
	hdr := w.Header()
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}
