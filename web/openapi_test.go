package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/openapitest"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/openapi"
)

// checkOpenAPI checks one request the tests made, and the answer the server
// gave it, against the OpenAPI document (openapitest.Check).
func checkOpenAPI(t testing.TB, req *http.Request, reqBody []byte, a answer) {
	t.Helper()
	openapitest.Check(t, req, reqBody, a.status, a.header, a.body)
}

// serveChecked serves req with h through a recorder, and checks the pair
// with checkOpenAPI, for the tests that call the handler directly.
func serveChecked(t testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		require.NoError(t, err)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	checkOpenAPI(t, req, body, answer{status: rec.Code, header: rec.Header(), body: rec.Body.String()})
	return rec
}

// routeAliases map the server's patterns that the document spells another
// way: the job actions are one catch-all route on the server (an id may
// hold "/actions/" once escaped), and one path with an action in the
// document.
var routeAliases = map[string]string{
	"POST /api/v1/queues/{q}/jobs/{rest...}": "POST /api/v1/queues/{q}/jobs/{id}/actions/{action}",
}

// documentedRoute turns a server pattern into the document's method and
// path: {name...} wildcards are one path parameter.
func documentedRoute(pattern string) string {
	if alias, ok := routeAliases[pattern]; ok {
		return alias
	}
	return strings.ReplaceAll(pattern, "...}", "}")
}

// Every route the server registers is in the OpenAPI document, and every
// operation of the document is a route of the server:
// a route added without its description, or a description left behind,
// fails here, in make test.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	doc, err := openapitest.Doc()
	require.NoError(t, err)
	srv, err := web.New(&web.Config{Store: discardStore{}})
	require.NoError(t, err)

	registered := map[string]bool{}
	for _, p := range web.Patterns(srv) {
		registered[documentedRoute(p)] = true
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for r := range registered {
		require.True(t, documented[r], "the server registers %s, which web/openapi/openapi.yaml does not describe", r)
	}
	for r := range documented {
		require.True(t, registered[r], "web/openapi/openapi.yaml describes %s, which the server does not register", r)
	}
}

// GET /api/v1/openapi.json serves the document in JSON, with no token even
// on a node that wants one; it changes nothing, so POST is refused.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *web.Config) { c.Token = "s3cret" })
	a := e.do("GET", "/api/v1/openapi.json", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	want, err := openapi.JSON()
	require.NoError(t, err)
	require.JSONEq(t, string(want), a.body)

	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(a.body))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context), "the JSON is a valid OpenAPI document")
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.NotNil(t, doc.Webhooks["delivery"], "the webhook protocol is described")

	require.Equal(t, http.StatusUnauthorized, e.do("POST", "/api/v1/openapi.json", "").status, "a change needs the token")
	require.Equal(t, http.StatusUnauthorized, e.do("GET", "/api/v1/queues", "").status, "other reads still need it")
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/v1/openapi.json?x=1", "").status)
}

// failures records what checkOpenAPI reports.
type failures struct {
	testing.TB
	errs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// checkOpenAPI fails a test on each kind of contradiction, and on nothing
// else.
func TestOpenAPICheckCatchesContradictions(t *testing.T) {
	t.Parallel()
	jsonAnswer := func(status int, body string) answer {
		return answer{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: body}
	}
	for _, c := range []struct {
		name, method, target, body string
		a                          answer
		fails                      bool
	}{
		{"a valid pair", "GET", "/api/v1/queues", "", jsonAnswer(200, `{"queues":[]}`), false},
		{"an error", "GET", "/api/v1/queues/q", "", jsonAnswer(404, `{"error":"no queue q"}`), false},
		{"a refused request the document allows", "POST", "/api/v1/queues/q/jobs", `[{"id":"a"}]`, jsonAnswer(400, `{"error":"bad","field":"jobs[0].id"}`), false},
		{"an id with '/'", "GET", "/api/v1/queues/q/state/a/b", "", jsonAnswer(200, `{"state":null,"version":0}`), false},
		{"an answer missing a member", "GET", "/api/v1/queues/q", "", jsonAnswer(200, `{"name":"q"}`), true},
		{"an answer with an undocumented member", "GET", "/api/v1/access", "", jsonAnswer(200, `{"write":true,"token_required":false,"admin":true}`), true},
		{"an error of another shape", "GET", "/api/v1/queues/q", "", jsonAnswer(404, `{"message":"no queue"}`), true},
		{"an undocumented success status", "GET", "/api/v1/queues", "", jsonAnswer(201, `{"queues":[]}`), true},
		{"a forbidden request taken", "POST", "/api/v1/queues/q/jobs", `[{"idx":"a"}]`, jsonAnswer(202, `{"enqueued":1,"duplicates":0}`), true},
		{"a forbidden parameter taken", "GET", "/api/v1/queues/q/jobs?limit=5000", "", jsonAnswer(200, `{"jobs":[],"next":""}`), true},
		{"no such route, answered", "GET", "/api/v1/nothing", "", jsonAnswer(200, `{}`), true},
		{"no such route, refused", "GET", "/api/v1/nothing", "", jsonAnswer(404, `{"error":"no endpoint"}`), false},
	} {
		f := &failures{TB: t}
		req, err := http.NewRequest(c.method, "http://127.0.0.1"+c.target, nil)
		require.NoError(t, err)
		checkOpenAPI(f, req, []byte(c.body), c.a)
		if c.fails {
			require.NotEmpty(t, f.errs, c.name)
		} else {
			require.Empty(t, f.errs, c.name)
		}
	}
}
