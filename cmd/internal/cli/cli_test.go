package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

func runCLI(args []string, env map[string]string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

const clusterJSON = `{"self":"n1","members":[
 {"name":"n1","state":"alive","http":"127.0.0.1:8080","actor":"","queues":["orders"],"version":"0.1.0"},
 {"name":"n2","state":"dead","http":"127.0.0.1:8081","actor":"127.0.0.1:8091","queues":["orders","mail"]}],
 "shards":[{"queue":"orders","shard":0,"owner":"n1","epoch":3},{"queue":"orders","shard":1,"owner":"","epoch":2}]}`

// Shards without an owner are explained queue by queue: a queue that no
// member has configured, one that only members serving nothing have, and
// one whose live members are between owners.
func TestMembersUnservedReasons(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"self":"n1","members":[
 {"name":"n1","state":"alive","queues":["orders"]},
 {"name":"n2","state":"draining","queues":["orders","mail"]},
 {"name":"n3","state":"dead","queues":["mail"]},
 {"name":"n4","state":"foreign","queues":["mail","old"]}],
 "shards":[{"queue":"mail","shard":0,"owner":""},{"queue":"mail","shard":1,"owner":""},
  {"queue":"old","shard":0,"owner":""},{"queue":"gone","shard":0,"owner":""},{"queue":"gone","shard":1,"owner":""},
  {"queue":"orders","shard":0,"owner":"n1"},{"queue":"orders","shard":1,"owner":"n1"}]}`))
	}))
	defer srv.Close()
	code, out, _ := runCLI([]string{"members", "--http", srv.URL}, nil)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, `
7 shards, 5 without an owner (* marks the node that answered)
queue mail: 2 of 2 shards without an owner: no live member has the queue configured, only members that serve nothing (dead: n3; draining: n2; foreign: n4)
queue old: 1 of 1 shards without an owner: no live member has the queue configured, only members that serve nothing (foreign: n4)
queue gone: 2 of 2 shards without an owner: no member has the queue configured: it is in the store from an earlier configuration or another node; add it to a node's queues to serve it
`)
	require.NotContains(t, out, "queue orders")
}

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
	require.Equal(t, `NAME  STATE  HTTP            ACTOR           QUEUES       VERSION  SHARDS
n1 *  alive  127.0.0.1:8080  -               orders       0.1.0    1
n2    dead   127.0.0.1:8081  127.0.0.1:8091  orders,mail  -        0

2 shards, 1 without an owner (* marks the node that answered)
queue orders: 1 of 2 shards without an owner: served by n1, between owners: a node joining, leaving or taking over from a dead one (lease_ttl + 2 s at most), or one that cannot reach Redis; look again
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
	code, out, _ := runCLI([]string{"members", "--help"}, nil)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "Usage: orderly members")
	code, _, _ = runCLI([]string{"frobnicate"}, nil)
	require.Equal(t, ExitUsage, code)
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		usage   string
		example string
	}{
		{[]string{"enqueue", "--help"}, "Usage: orderly enqueue --queue Q --id ID", "  orderly enqueue --queue orders --file jobs.jsonl\n"},
		{[]string{"stats", "-h"}, "Usage: orderly stats [--queue Q] [flags]", "  orderly stats --queue orders --json\n"},
		{[]string{"members", "--help"}, "Usage: orderly members [flags]", "  orderly members --http 10.0.0.5:8080\n"},
		{[]string{"morgue", "list", "--help"}, "Usage: orderly morgue list --queue Q [--order id|updated_at]", "  orderly morgue list --queue orders\n"},
		{[]string{"morgue", "requeue", "--help"}, "Usage: orderly morgue requeue --queue Q (--all [--yes] | ID...)", "  orderly morgue requeue --queue orders order-1 order-7\n"},
		{[]string{"morgue", "delete", "--help"}, "Usage: orderly morgue delete --queue Q (--all [--yes] | ID...)", "  orderly morgue delete --queue orders --all --yes\n"},
	} {
		code, out, errOut := runCLI(tc.args, nil)
		require.Equal(t, ExitOK, code, tc.args)
		require.Empty(t, errOut, "help goes to stdout")
		require.True(t, strings.HasPrefix(out, tc.usage), "%v: %s", tc.args, out)
		require.Contains(t, out, "\nExamples:\n")
		require.Contains(t, out, tc.example)
		require.Contains(t, out, "\nFlags:\n")
		// One style: --flag, its value's type, then its default and its
		// environment variable; never Go's "-flag" dump.
		require.Contains(t, out, "  --http-token string\n        bearer token of the HTTP API\n        (env ORDERLY_HTTP_TOKEN)\n")
		require.Contains(t, out, "  --http string\n        address of a node's HTTP API, host:port or URL\n        (default 127.0.0.1:8080; env ORDERLY_HTTP)\n")
		require.NotRegexp(t, `(?m)^  -[a-z]`, out)
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"enqueue", "stats", "members", "morgue"} {
		_, ok := lookup(name)
		require.True(t, ok, name)
	}
	for _, name := range []string{"--help", "serve"} {
		_, ok := lookup(name)
		require.False(t, ok, name)
	}

	code, _, errOut := runCLI([]string{}, nil)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "orderly: missing command")

	// A mistyped command: the nearest one.
	for _, tc := range []struct{ typed, want string }{
		{"stast", `orderly: unknown command "stast"; did you mean stats? (see orderly --help)` + "\n"},
		{"enqeue", `orderly: unknown command "enqeue"; did you mean enqueue? (see orderly --help)` + "\n"},
		{"mem", `orderly: unknown command "mem"; did you mean members? (see orderly --help)` + "\n"},
		{"frobnicate", `orderly: unknown command "frobnicate" (see orderly --help)` + "\n"},
	} {
		code, out, errOut := runCLI([]string{tc.typed}, nil)
		require.Equal(t, ExitUsage, code, tc.typed)
		require.Empty(t, out)
		require.Equal(t, tc.want, errOut)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"enqueue", "--queue", "orders", "--id", "a"},
		{"stats"},
		{"members"},
		{"morgue", "list", "--queue", "orders"},
		{"morgue", "requeue", "--queue", "orders", "a"},
		{"morgue", "delete", "--queue", "orders", "--all", "--yes"},
	} {
		code, out, errOut := runCLI(append(args, "--http", unreachable), nil)
		require.Equal(t, ExitError, code, args)
		require.Empty(t, out)
		require.Contains(t, errOut, "cannot reach the node at 127.0.0.1:1: ", args)
	}
	code, _, errOut := runCLI([]string{"stats", "--http", "ftp://x"}, nil)
	require.Equal(t, ExitError, code)
	require.Contains(t, errOut, `orderly stats: --http "ftp://x" is not an address (host:port or an http(s) URL)`)

	// An answer that is not the API's: a proxy's HTML error page.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>\x1b[2J bad gateway</html>"))
	}))
	defer srv.Close()
	code, _, errOut = runCLI([]string{"stats", "--http", srv.URL}, nil)
	require.Equal(t, ExitError, code)
	require.Equal(t, "orderly stats: <html>\\x1b[2J bad gateway</html> (HTTP 502)\n", errOut)
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		rest []string
		all  bool
	}{
		{nil, nil, false},
		{[]string{"a", "b"}, []string{"a", "b"}, false},
		{[]string{"a", "--all", "b"}, []string{"a", "b"}, true},
		{[]string{"--all", "a"}, []string{"a"}, true},
		{[]string{"a", "--", "--all", "-b"}, []string{"a", "--all", "-b"}, false},
		{[]string{"--", "-"}, []string{"-"}, false},
		{[]string{"-", "--all"}, []string{"-"}, true},
	} {
		e := &env{stderr: io.Discard, getenv: func(string) string { return "" }}
		fs, _ := e.flags("test", help{})
		all := fs.Bool("all", false, "")
		rest, _, stop := e.parseArgs(fs, tc.args)
		require.False(t, stop, tc.args)
		require.Equal(t, tc.rest, rest, tc.args)
		require.Equal(t, tc.all, *all, tc.args)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{time.Microsecond, "1ms"},
		{250 * time.Millisecond, "250ms"},
		{999 * time.Millisecond, "999ms"},
		{999900 * time.Microsecond, "1.0s"},
		{1200 * time.Millisecond, "1.2s"},
		{9940 * time.Millisecond, "9.9s"},
		{9960 * time.Millisecond, "10s"},
		{42 * time.Second, "42s"},
		{59600 * time.Millisecond, "1m0s"},
		{184 * time.Second, "3m4s"},
		{time.Hour - time.Second, "59m59s"},
		{time.Hour, "1h0m"},
		{2*time.Hour + 5*time.Minute + 10*time.Second, "2h5m"},
		{24*time.Hour - 10*time.Second, "1d0h"},
		{76 * time.Hour, "3d4h"},
		{seconds(1e300), "106751d23h"},
	} {
		require.Equal(t, tc.want, formatDuration(tc.d), tc.d)
	}
}

func TestCell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 10, "-"},
		{"plain", 10, "plain"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven 11!!", 10, "eleven 11…"},
		{"ünïcödé ok", 7, "ünïcöd…"},
		{"a\tb\nc\rd", 20, `a\tb\nc\rd`},
		{"\x1b[31mred\x7f", 20, `\x1b[31mred\x7f`},
		{"bidi\u202eevil", 20, `bidi\u202eevil`},
		{"bad\xff\xfeutf8", 20, `bad\xff\xfeutf8`},
		{"\ufffd is fine", 20, "\ufffd is fine"},
		{"nbsp\u00a0", 20, `nbsp\u00a0`},
	} {
		require.Equal(t, tc.want, cell(tc.in, tc.n), tc.in)
	}
}

func TestInterrupted(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := n.runWith(runOpts{ctx: ctx}, "stats")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly stats: interrupted\n", r.stderr)
}

// With --json, errors are one JSON object on stderr: usage errors, errors
// the node answered, and how far an import got.
func TestJSONErrors(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	decode := func(t *testing.T, r result) map[string]any {
		t.Helper()
		require.Empty(t, r.stdout)
		require.True(t, strings.HasSuffix(r.stderr, "}\n"), r.stderr)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &v), r.stderr)
		return v
	}

	r := n.run("enqueue", "--json", "--queue", "orders", "--id", "a", "--payload", "hello")
	require.Equal(t, ExitUsage, r.code)
	v := decode(t, r)
	require.Equal(t, "enqueue", v["command"])
	require.EqualValues(t, ExitUsage, v["exit_code"])
	require.Contains(t, v["error"], "--payload: not valid JSON")

	r = n.run("stats", "--queu", "orders", "--json")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "unknown flag --queu; did you mean --queue? (see orderly stats --help)", decode(t, r)["error"])

	r = n.run("morgue", "list", "--queue", "nope", "--json")
	require.Equal(t, ExitError, r.code)
	v = decode(t, r)
	require.Equal(t, map[string]any{"error": `unknown queue "nope" (field queue; HTTP 404)`, "command": "morgue list",
		"field": "queue", "status": float64(404), "exit_code": float64(1)}, v)

	path := writeFile(t, "jobs.jsonl", lines("j", 1, 3)+`{"id": ""}`+"\n")
	r = n.run("enqueue", "--queue", "orders", "--file", path, "--batch", "2", "--json")
	require.Equal(t, ExitError, r.code)
	v = decode(t, r)
	require.Equal(t, path+":4: id: must not be empty", v["error"])
	require.Equal(t, map[string]any{"enqueued": float64(2), "first_line": float64(1), "last_line": float64(2), "resume_skip": float64(2)}, v["details"])

	r = exec(runOpts{}, "frobnicate", "--json")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, `unknown command "frobnicate" (see orderly --help)`, decode(t, r)["error"])

	// Without --json, the same errors are lines.
	r = n.run("stats", "--queu", "orders")
	require.Equal(t, "orderly stats: unknown flag --queu; did you mean --queue? (see orderly stats --help)\n", r.stderr)
}

// /dev/null is a character device, not a terminal: no prompt is shown to
// it, and a confirmation needs --yes.
func TestIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	fi, err := null.Stat()
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeCharDevice, "a character device")
	require.False(t, isTerminal(null))
	require.False(t, isTerminal(&bytes.Buffer{}))
	f, err := os.CreateTemp(t.TempDir(), "x")
	require.NoError(t, err)
	defer f.Close()
	require.False(t, isTerminal(f))
}

// orderly version prints orderly.Version, the version nodes advertise,
// whatever the build recorded; the commit and a module version that is
// not v<Version> are metadata beside it.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "d2e7d2e0123456789abcdef0123456789abcdef0"}
	for _, tc := range []struct {
		info    debug.BuildInfo
		stamped string
		meta    buildMeta
		line    string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{rev}}, "",
			buildMeta{Commit: "d2e7d2e"}, "orderly V (commit d2e7d2e, go1.26.8, linux/amd64)\n"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{rev, {Key: "vcs.modified", Value: "true"}}}, "",
			buildMeta{Commit: "d2e7d2e-dirty"}, "orderly V (commit d2e7d2e-dirty, go1.26.8, linux/amd64)\n"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{rev}}, "abc1234",
			buildMeta{Commit: "abc1234"}, "orderly V (commit abc1234, go1.26.8, linux/amd64)\n"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "abc1234-dirty",
			buildMeta{Commit: "abc1234-dirty"}, "orderly V (commit abc1234-dirty, go1.26.8, linux/amd64)\n"},
		{debug.BuildInfo{Main: debug.Module{Version: "v" + orderly.Version}}, "",
			buildMeta{}, "orderly V (go1.26.8, linux/amd64)\n"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261201120000-d2e7d2e01234"}}, "",
			buildMeta{Module: "v0.1.1-0.20261201120000-d2e7d2e01234"}, "orderly V (module v0.1.1-0.20261201120000-d2e7d2e01234, go1.26.8, linux/amd64)\n"},
		{debug.BuildInfo{}, "", buildMeta{}, "orderly V (go1.26.8, linux/amd64)\n"},
	} {
		meta := buildMetaOf(&tc.info, tc.stamped)
		require.Equal(t, tc.meta, meta)
		require.Equal(t, strings.Replace(tc.line, "V", orderly.Version, 1), versionLine(meta, "go1.26.8", "linux/amd64"))
	}
}

func TestHelpCommand(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI([]string{"help"}, nil)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "Commands:\n  enqueue     enqueue a job given by flags, or the jobs of a JSONL file\n")
	code, out, _ = runCLI([]string{"help", "members"}, nil)
	require.Equal(t, ExitOK, code)
	require.True(t, strings.HasPrefix(out, "Usage: orderly members"), out)
	code, _, errOut := runCLI([]string{"help", "membres"}, nil)
	require.Equal(t, ExitUsage, code)
	require.Equal(t, "orderly help: unknown command \"membres\"; did you mean members? (see orderly --help)\n", errOut)
}
