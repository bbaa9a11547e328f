// Package openapitest checks HTTP requests to Orderly's API, and the
// answers they get, against its OpenAPI document (web/openapi) with
// kin-openapi: Check for one pair, Handler to check every request a test
// server serves.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web/openapi"
)

// Doc returns the OpenAPI document, loaded and validated once.
func Doc() (*openapi3.T, error) {
	d, err := apiDoc()
	if err != nil {
		return nil, err
	}
	return d.doc, nil
}

// apiDoc is the OpenAPI document, loaded and validated once, with its
// router.
var apiDoc = sync.OnceValues(func() (*openapiDoc, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.YAML)
	if err != nil {
		return nil, fmt.Errorf("loading openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing openapi.yaml: %w", err)
	}
	return &openapiDoc{doc: doc, router: router}, nil
})

type openapiDoc struct {
	doc    *openapi3.T
	router routers.Router
}

// documentedRoots are the paths that the document describes; a request to
// a path that ends with one of them after a base path is checked as that
// path (Config.BasePath).
var documentedRoots = []string{"/api/", "/metrics", "/healthz", "/readyz"}

// Check checks one request a test made, and the answer the server
// gave it, against the OpenAPI document; a contradiction fails t:
//   - an answer whose status and body the document does not describe for
//     the operation (every error must be the Error shape);
//   - a 2xx answer to a request the document says is invalid (the server
//     took what the document forbids). A request the document allows may
//     still be refused (4xx): the document cannot say every rule (a field
//     given twice, UTF-8, the queue's configuration), and the error shape
//     is checked then.
//   - a request to no documented route that is not answered with an error,
//     unless it is a file of the dashboard (the one thing the document does
//     not describe: static files, not an API).
func Check(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body string) {
	t.Helper()
	d, err := apiDoc()
	require.NoError(t, err)
	r := req.Clone(context.Background())
	r.Body = http.NoBody
	if len(reqBody) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json") // what the server assumes
		}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json") {
		// The server takes application/*+json as JSON; an OpenAPI media
		// type range cannot say "+json".
		r.Header.Set("Content-Type", "application/json")
	}
	escapeIDPath(r)
	head := r.Method == http.MethodHead
	if head {
		r.Method = http.MethodGet // every GET answers HEAD, without a body
	}
	route, params, err := d.router.FindRoute(r)
	if err != nil {
		for _, root := range documentedRoots {
			if i := strings.Index(r.URL.Path, root); i > 0 && err != nil {
				r.URL.Path = r.URL.Path[i:]
				if r.URL.RawPath != "" {
					if j := strings.Index(r.URL.RawPath, root); j > 0 {
						r.URL.RawPath = r.URL.RawPath[j:]
					}
				}
				route, params, err = d.router.FindRoute(r)
			}
		}
	}
	what := fmt.Sprintf("%s %s -> %d %s", req.Method, req.URL.RequestURI(), status, truncateBody(body))
	if err != nil {
		if status < 400 {
			if !strings.HasPrefix(req.URL.Path, "/api/") && header.Get("Content-Type") != "application/json" {
				return // the dashboard's files
			}
			t.Errorf("openapi: %s: no documented route, yet the answer is not an error", what)
			return
		}
		checkErrorBody(t, what, head, header, body)
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, ExcludeResponseBody: head}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && (errors.Is(reqErr, strconv.ErrRange) || strings.Contains(reqErr.Error(), strconv.ErrRange.Error())) {
		// A JSON number beyond float64 (a payload of 1e999), which JSON
		// allows and the server stores as given: the validator decodes
		// numbers into float64 and cannot read it.
		reqErr = nil
	}
	if reqErr != nil && status < 300 {
		t.Errorf("openapi: %s: the server took a request the document forbids: %v", what, reqErr)
	}
	if head {
		return
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes([]byte(body))
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("openapi: %s: the answer contradicts the document: %v", what, err)
	}
}

// idPath matches the paths whose id the server takes as the rest of the
// path, '/' included ({id...}): the document's {id} is one segment.
var idPath = regexp.MustCompile(`^(/api/v1/queues/[^/]+/(?:jobs|state)/)(.+)$`)

// escapeIDPath rewrites an id given with unescaped '/' into the one
// segment the document describes (%2F), as the server reads it; a job
// action keeps its "/actions/<action>" tail.
func escapeIDPath(r *http.Request) {
	m := idPath.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil || !strings.Contains(m[2], "/") {
		return
	}
	id, tail := m[2], ""
	if i := strings.LastIndex(id, "/actions/"); i >= 0 && r.Method == http.MethodPost && strings.Contains(m[1], "/jobs/") {
		id, tail = id[:i], id[i:]
	}
	raw := m[1] + strings.ReplaceAll(id, "/", "%2F") + tail
	if u, err := url.Parse(raw); err == nil {
		r.URL.Path, r.URL.RawPath = u.Path, u.RawPath
	}
}

// checkErrorBody requires the Error shape of an answer to no route.
func checkErrorBody(t testing.TB, what string, head bool, header http.Header, body string) {
	t.Helper()
	if head || header.Get("Content-Type") != "application/json" {
		return // a HEAD has no body; /metrics and the dashboard may answer in text
	}
	var e map[string]any
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&e); err != nil {
		t.Errorf("openapi: %s: an error that is not a JSON object: %v", what, err)
		return
	}
	msg, ok := e["error"].(string)
	if !ok || msg == "" {
		t.Errorf("openapi: %s: an error without \"error\"", what)
	}
	for k := range e {
		if k != "error" && k != "field" {
			t.Errorf("openapi: %s: an error with the unknown member %q", what, k)
		}
	}
}

func truncateBody(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// Handler returns h, checking each request it serves and its answer with
// Check: a middleware for a test server (webtest.WithHandler).
func Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		req := r.Clone(context.Background())
		h.ServeHTTP(rec, r)
		Check(t, req, body, rec.status, rec.Header(), rec.body.String())
	})
}

// recorder passes an answer on and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath (Flush).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
