package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func runCLI(args []string, env map[string]string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

const clusterJSON = `{"self":"n1","members":[
 {"name":"n1","state":"alive","http":"127.0.0.1:8080","actor":"","queues":["orders"]},
 {"name":"n2","state":"dead","http":"127.0.0.1:8081","actor":"127.0.0.1:8091","queues":["orders","mail"]}],
 "shards":[{"queue":"orders","shard":0,"owner":"n1","epoch":3},{"queue":"orders","shard":1,"owner":"","epoch":2}]}`

func TestMembers(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		require.Equal(t, "/api/v1/cluster", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(clusterJSON))
	}))
	defer srv.Close()

	code, out, _ := runCLI([]string{"members", "--http", srv.URL}, nil)
	require.Equal(t, ExitOK, code)
	require.Equal(t, `NAME  STATE  HTTP            ACTOR           QUEUES       SHARDS
n1 *  alive  127.0.0.1:8080  -               orders       1
n2    dead   127.0.0.1:8081  127.0.0.1:8091  orders,mail  0

2 shards, 1 without an owner (* marks the node that answered)
`, out)

	code, out, _ = runCLI([]string{"members", "--json"}, map[string]string{"ORDERLY_HTTP": strings.TrimPrefix(srv.URL, "http://"), "ORDERLY_HTTP_TOKEN": "s3cret"})
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, `"self": "n1"`)
	require.Equal(t, "Bearer s3cret", auth)
}

func TestExitCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"missing bearer token"}`))
	}))
	defer srv.Close()
	code, _, errOut := runCLI([]string{"members", "--http", srv.URL}, nil)
	require.Equal(t, ExitError, code)
	require.Contains(t, errOut, "missing bearer token (HTTP 401)")

	code, _, errOut = runCLI([]string{"members", "--http", "127.0.0.1:1"}, nil)
	require.Equal(t, ExitError, code)
	require.Contains(t, errOut, "cannot reach the node at 127.0.0.1:1")

	code, _, _ = runCLI([]string{"members", "--nope"}, nil)
	require.Equal(t, ExitUsage, code)
	code, _, _ = runCLI([]string{"members", "extra"}, nil)
	require.Equal(t, ExitUsage, code)
	code, _, errOut = runCLI([]string{"members", "--help"}, nil)
	require.Equal(t, ExitOK, code)
	require.Contains(t, errOut, "Usage: orderly members")
	code, _, _ = runCLI([]string{"frobnicate"}, nil)
	require.Equal(t, ExitUsage, code)
}
