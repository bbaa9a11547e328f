package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// hostile is one bad or hostile request and the answer it must get.
type hostile struct {
	name    string
	open    bool   // sent to the node without a token (else to the one with)
	request string // the raw request, as sent on the connection
	status  int
	ours    bool // answered by the API (JSON), not by net/http's parser
	// cut: the server may also close the connection before the client
	// read its answer (a reset: it refuses a request it did not read)
	cut bool
}

// httpReq builds a raw HTTP/1.1 request to localhost; headers are full
// lines without their CRLF. A body gets its Content-Length unless a header
// gives one or a Transfer-Encoding.
func httpReq(method, target, body string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	host := true
	framed := false
	for _, h := range headers {
		name, _, _ := strings.Cut(h, ":")
		switch strings.ToLower(name) {
		case "host":
			host = false
		case "content-length", "transfer-encoding":
			framed = true
		}
	}
	if host {
		b.WriteString("Host: localhost\r\n")
	}
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != "" && !framed {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

const (
	auth = "Authorization: Bearer s3cret"
	ctj  = "Content-Type: application/json"
)

// hostileInputs are the requests of TestHostileInput: auth bypasses, path
// tricks, malformed and oversized requests, smuggling attempts, DNS
// rebinding. None may change what is stored.
func hostileInputs() []hostile {
	bigBody := "[" + strings.Repeat(" ", 9<<20) + "]"
	chunk := strings.Repeat("x", 1<<20)
	var chunked strings.Builder
	for range 9 {
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	chunked.WriteString("0\r\n\r\n")
	job := `[{"id": "good-1", "payload": "overwritten?"}]`
	return []hostile{
		// Authentication.
		{name: "no token", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj), status: 401, ours: true},
		{name: "wrong token", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, "Authorization: Bearer s3cre"), status: 401, ours: true},
		{name: "token prefix", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, "Authorization: Bearer s3cret-and-more"), status: 401, ours: true},
		{name: "empty bearer", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, "Authorization: Bearer "), status: 401, ours: true},
		{name: "basic scheme", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, "Authorization: Basic czNjcmV0Og=="), status: 401, ours: true},
		{name: "token in the query", request: httpReq("POST", "/api/v1/queues/hold/jobs?token=s3cret", job, ctj), status: 401, ours: true},
		{name: "second header holds the token", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, "Authorization: Bearer x", auth), status: 401, ours: true},
		{name: "delete without token", request: httpReq("DELETE", "/api/v1/queues/hold/jobs/good-1", ""), status: 401, ours: true},
		{name: "action without token", request: httpReq("POST", "/api/v1/queues/hold/actions/kill_failed", ""), status: 401, ours: true},
		{name: "metrics without token", request: httpReq("GET", "/metrics", ""), status: 401, ours: true},
		{name: "original-url header", request: httpReq("POST", "/healthz", job, ctj, "X-Original-URL: /api/v1/queues/hold/jobs", "X-Rewrite-URL: /api/v1/queues/hold/jobs"), status: 405, ours: true},
		{name: "cross-site with token", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, auth, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site"), status: 403, ours: true},
		// Paths.
		{name: "dot segments to metrics", request: httpReq("GET", "/healthz/../metrics", ""), status: 401, ours: true},
		{name: "dot segments from a probe", request: httpReq("DELETE", "/healthz/../api/v1/queues/hold/jobs/good-1", ""), status: 401, ours: true},
		{name: "escaped dot segments", request: httpReq("DELETE", "/%2e%2e/api/v1/queues/hold/jobs/good-1", ""), status: 405, ours: true},
		{name: "escaped dot segments read", request: httpReq("GET", "/%2e%2e/api/v1/queues", ""), status: 200}, // the dashboard's shell, no data
		{name: "absolute form", request: httpReq("DELETE", "http://localhost/api/v1/queues/hold/jobs/good-1", ""), status: 401, ours: true},
		{name: "double slash", request: httpReq("DELETE", "//api/v1/queues/hold/jobs/good-1", "", auth), status: 404, ours: true},
		{name: "id with dot segments", request: httpReq("DELETE", "/api/v1/queues/hold/jobs/good-2/../good-1", "", auth), status: 404, ours: true},
		{name: "escaped slash id", request: httpReq("DELETE", "/api/v1/queues/hold/jobs/..%2Fgood-1", "", auth), status: 404, ours: true},
		{name: "NUL in queue", request: httpReq("POST", "/api/v1/queues/hold%00/jobs", job, ctj, auth), status: 400, ours: true},
		{name: "unknown queue", request: httpReq("POST", "/api/v1/queues/nope/jobs", job, ctj, auth), status: 404, ours: true},
		{name: "queue with a brace", request: httpReq("POST", "/api/v1/queues/%7Bhold%7D/jobs", job, ctj, auth), status: 400, ours: true},
		{name: "unknown action", request: httpReq("POST", "/api/v1/queues/hold/actions/drop_all", "", auth), status: 404, ours: true},
		{name: "invalid UTF-8 path", request: httpReq("GET", "/api/v1/queues/\xff", "", auth), status: 400, ours: false},
		// Bodies.
		{name: "malformed JSON", request: httpReq("POST", "/api/v1/queues/hold/jobs", `[{"id": "good-1"`, ctj, auth), status: 400, ours: true},
		{name: "one bad job of two", request: httpReq("POST", "/api/v1/queues/hold/jobs", `[{"id": "new-1"}, {"id": "good-1", "score": "NaN"}]`, ctj, auth), status: 400, ours: true},
		{name: "score out of range", request: httpReq("POST", "/api/v1/queues/hold/jobs", `[{"id": "new-1", "score": 1e400}]`, ctj, auth), status: 400, ours: true},
		{name: "duplicate field", request: httpReq("POST", "/api/v1/queues/hold/jobs", `[{"id": "new-1", "id": "good-1"}]`, ctj, auth), status: 400, ours: true},
		{name: "empty id", request: httpReq("POST", "/api/v1/queues/hold/jobs", `[{"id": ""}]`, ctj, auth), status: 400, ours: true},
		{name: "object, not array", request: httpReq("POST", "/api/v1/queues/hold/jobs", `{"id": "new-1"}`, ctj, auth), status: 400, ours: true},
		{name: "not JSON type", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, "Content-Type: text/plain", auth), status: 415, ours: true},
		{name: "announced 9 MiB, unsent", request: httpReq("POST", "/api/v1/queues/hold/jobs", "", ctj, auth, "Content-Length: 9437184") + "[", status: 413, ours: true},
		{name: "9 MiB sent", request: httpReq("POST", "/api/v1/queues/hold/jobs", bigBody, ctj, auth), status: 413, ours: true},
		{name: "9 MiB chunked", request: httpReq("POST", "/api/v1/queues/hold/jobs", chunked.String(), ctj, auth, "Transfer-Encoding: chunked"), status: 413, ours: true},
		{name: "bad chunk size", request: httpReq("POST", "/api/v1/queues/hold/jobs", "zz\r\n[]\r\n0\r\n\r\n", ctj, auth, "Transfer-Encoding: chunked"), status: 400, ours: true},
		{name: "requeue ids not a list", request: httpReq("POST", "/api/v1/queues/hold/morgue/requeue", `{"ids": "good-1"}`, ctj, auth), status: 400, ours: true},
		{name: "requeue all and ids", request: httpReq("POST", "/api/v1/queues/hold/morgue/delete", `{"all": true, "ids": []}`, ctj, auth), status: 400, ours: true},
		{name: "action with a body", request: httpReq("POST", "/api/v1/queues/hold/actions/delete_failed", `{"all": true}`, ctj, auth), status: 400, ours: true},
		// Framing the server must refuse.
		{name: "length and chunked", request: httpReq("POST", "/api/v1/queues/hold/jobs", "0\r\n\r\n", ctj, auth, "Content-Length: 5", "Transfer-Encoding: chunked"), status: 400},
		{name: "two lengths", request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, auth, fmt.Sprintf("Content-Length: %d", len(job)), "Content-Length: 2"), status: 400},
		{name: "header of 2 MiB", request: httpReq("GET", "/healthz", "", "X-Big: "+strings.Repeat("a", 2<<20)), status: 431, cut: true},
		{name: "no Host", request: "GET /api/v1/queues HTTP/1.1\r\n\r\n", status: 400},
		{name: "bad method", request: "G(T /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 400},
		{name: "HTTP/2 preface on HTTP/1", request: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 401, ours: true},
		// DNS rebinding, on the node without a token.
		{name: "rebinding read", open: true, request: httpReq("GET", "/api/v1/queues/hold/jobs", "", "Host: evil.example"), status: 421, ours: true},
		{name: "rebinding enqueue", open: true, request: httpReq("POST", "/api/v1/queues/hold/jobs", job, ctj, "Host: evil.example:8080", "Origin: http://evil.example:8080", "Sec-Fetch-Site: same-origin"), status: 421, ours: true},
		{name: "rebinding delete", open: true, request: httpReq("DELETE", "/api/v1/queues/hold/jobs/good-1", "", "Host: 127.0.0.1.evil.example"), status: 421, ours: true},
		{name: "rebinding dashboard", open: true, request: httpReq("GET", "/", "", "Host: evil.example"), status: 421, ours: true},
		{name: "open: path trick", open: true, request: httpReq("DELETE", "/api/v1/queues/hold/jobs/good-2/../good-1", ""), status: 404, ours: true},
	}
}

// TestHostileInput sends each hostile request to a real node, on its own
// connection: each is answered (at once, with the status it deserves, as
// JSON when the API answers), the node stays healthy, and nothing stored
// changes. It runs in seconds, in make test and, in CI, with the fuzz
// targets (make hostile).
func TestHostileInput(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	const config = "queues: [{name: hold, shards: 2, handler: {type: noop}}]"
	tok := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: config, Args: []string{"--http-token", "s3cret"}})
	open := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: config, Args: []string{"--redis-prefix", "open"}})
	for _, n := range []*nodetest.Node{tok, open} {
		var jobs []string
		for i := range 20 {
			jobs = append(jobs, fmt.Sprintf(`{"id": "good-%d", "payload": {"n": %d}, "perform_in": 86400}`, i, i))
		}
		res, _, err := rawRequest(t, fmt.Sprintf("127.0.0.1:%d", n.Port), httpReq("POST", "/api/v1/queues/hold/jobs", "["+strings.Join(jobs, ",")+"]", ctj, auth), 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, res.StatusCode)
		n.WaitReady()
	}
	rdb := srv.Client(t)
	before := storeDigest(t, rdb)

	for _, h := range hostileInputs() {
		n := tok
		if h.open {
			n = open
		}
		addr := fmt.Sprintf("127.0.0.1:%d", n.Port)
		start := time.Now()
		res, body, err := rawRequest(t, addr, h.request, 10*time.Second)
		if h.cut && errors.Is(err, syscall.ECONNRESET) {
			t.Logf("%-32s connection reset in %s", h.name, time.Since(start).Round(time.Millisecond))
			continue
		}
		require.NoError(t, err, "%s: no answer", h.name)
		require.Equal(t, h.status, res.StatusCode, "%s: %s", h.name, body)
		if h.ours {
			var e struct{ Error string }
			require.NoError(t, json.Unmarshal([]byte(body), &e), "%s: %s", h.name, body)
			require.NotEmpty(t, e.Error, "%s: %s", h.name, body)
		}
		switch h.status {
		case 401, 403, 408, 413, 421:
			require.True(t, res.Close, "%s: a refusal closes the connection", h.name)
		}
		t.Logf("%-32s %d in %s", h.name, res.StatusCode, time.Since(start).Round(time.Millisecond))
		code, _ := n.Do("GET", "/healthz", nil)
		require.Equal(t, http.StatusOK, code, "%s: the node stays healthy", h.name)
	}
	require.Equal(t, before, storeDigest(t, rdb), "nothing stored changed")
}

// storeDigest hashes every key of the store with its value, leases, their
// epochs and the queues' history samples aside: they are the nodes' own (a
// lease lost on a loaded machine is taken again with a new epoch, and a
// node samples its queues' counts every minute).
func storeDigest(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	slices.Sort(keys)
	out := map[string]string{}
	for _, k := range keys {
		if strings.HasSuffix(k, ":lease") || strings.HasSuffix(k, ":epoch") || strings.HasSuffix(k, ":hist") {
			continue
		}
		v, err := rdb.Dump(ctx, k).Result()
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(v))
		out[k] = hex.EncodeToString(sum[:8])
	}
	require.NotEmpty(t, out)
	return out
}
