package sdk

import (
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/openapitest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	redistest.AtExit(nodetest.Cleanup)
	redistest.Main(m)
}

// A missing python3 or node/npm is a failure instead of a skip when these
// are set (CI sets both).
const (
	requirePythonEnv = "ORDERLY_REQUIRE_PYTHON"
	requireNodeEnv   = "ORDERLY_REQUIRE_NODE"
)

const (
	token     = "sdk-test-token"
	secret    = "s3cr3t-for-the-sdk-tests"
	stdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// lang is one SDK's queues on the node and the ports of its receivers.
type lang struct {
	prefix            string
	hookPort, stdPort int
}

// freePort returns a port of 127.0.0.1 free when asked; the SDK's test
// listens on it once the node runs (the node retries a delivery until then).
// It comes from the same set as the ports of Redis and the node, so that
// neither is handed it afterwards (the kernel offers a port it just freed
// again; the SDK's receiver then failed to listen, "address already in use").
func freePort(t *testing.T) int {
	t.Helper()
	p, err := redistest.FreePort()
	require.NoError(t, err)
	return p
}

// config is the node's queues for each language: a plain queue, a stateful
// queue, two stateful webhook queues, one per signature scheme, a pull
// queue with a worker token, and a pull queue with a short lease for the
// deadline extension tests.
func config(langs ...lang) string {
	var b strings.Builder
	b.WriteString("queues:\n")
	for _, l := range langs {
		fmt.Fprintf(&b, `  - name: %[1]s-plain
    shards: 2
    dedup_window: 10m
    handler: {type: noop}
  - name: %[1]s-state
    shards: 2
    state: true
    handler: {type: noop}
  - name: %[1]s-hook
    shards: 2
    state: true
    retry: {policy: linear, base: 200ms}
    handler: {type: http, url: "http://127.0.0.1:%[2]d/perform", timeout: 5s, secret: %[4]s}
  - name: %[1]s-std
    shards: 2
    state: true
    retry: {policy: linear, base: 200ms}
    handler: {type: http, url: "http://127.0.0.1:%[3]d/perform", timeout: 5s, signature: standard, secret: %[5]s}
  - name: %[1]s-pull
    shards: 2
    batch_size: 1
    timeout: 20s
    retry: {policy: linear, base: 100ms}
    handler: {type: pull, lease: 5s, worker_token: %[1]s-worker-token}
  - name: %[1]s-lease
    shards: 1
    batch_size: 1
    timeout: 30s
    retry: {policy: linear, base: 100ms}
    handler: {type: pull, lease: 3s}
`, l.prefix, l.hookPort, l.stdPort, secret, stdSecret)
	}
	return b.String()
}

// node starts a node on a throwaway Redis with the language's queues and
// returns the environment of the SDK tests, whose requests and the node's
// answers are checked against the OpenAPI document on the way.
func node(t *testing.T, l lang) []string {
	t.Helper()
	n := nodetest.Start(t, nodetest.Options{
		Redis:  redistest.NewServer(t, redistest.Options{}).URL(),
		Config: config(l),
		Env:    []string{"ORDERLY_HTTP_TOKEN=" + token},
	})
	n.WaitReady()
	// The SDKs talk to the node through a proxy that checks every request
	// and answer against the OpenAPI document (web/openapi).
	target, err := url.Parse(n.HTTP)
	require.NoError(t, err)
	proxy := httptest.NewServer(openapitest.Handler(t, httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:\n%s", n.Logs())
		}
	})
	return append(os.Environ(), "ORDERLY_PULL_NEXT=1",
		"ORDERLY_URL="+proxy.URL, "ORDERLY_TOKEN="+token, "ORDERLY_PREFIX="+l.prefix,
		"ORDERLY_WORKER_TOKEN="+l.prefix+"-worker-token",
		"ORDERLY_SECRET="+secret, "ORDERLY_STD_SECRET="+stdSecret,
		fmt.Sprintf("ORDERLY_HOOK_PORT=%d", l.hookPort), fmt.Sprintf("ORDERLY_STD_PORT=%d", l.stdPort))
}

// need finds a program, or skips (fails when env is set).
func need(t *testing.T, env string, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv(env) != "" {
				t.Fatalf("%s not found (%v), and %s is set", p, err, env)
			}
			t.Skipf("%s not found (%v): set %s to make this a failure", p, err, env)
		}
	}
}

// run runs a command in dir and fails the test with its output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
}

// The Python SDK's unit tests (signature vectors, the pull worker against a
// fake pull server) and its tests against the node: enqueue, lookup,
// cancel, state compare-and-set, the feed, and deliveries signed by both
// schemes, verified by its receiver, whose answers commit state.
func TestPython(t *testing.T) {
	need(t, requirePythonEnv, "python3")
	env := node(t, lang{prefix: "py", hookPort: freePort(t), stdPort: freePort(t)})
	dir, err := filepath.Abs("python")
	require.NoError(t, err)
	run(t, dir, append(env, "PYTHONDONTWRITEBYTECODE=1"), "python3", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
}

// The TypeScript SDK's tests, the same as Python's, after npm ci and a
// build with tsc.
func TestTypeScript(t *testing.T) {
	need(t, requireNodeEnv, "node", "npm")
	out, err := exec.Command("node", "-p", "process.versions.node.split('.')[0]").Output()
	require.NoError(t, err)
	if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); major < 20 {
		if os.Getenv(requireNodeEnv) != "" {
			t.Fatalf("node %s is older than 20, and %s is set", strings.TrimSpace(string(out)), requireNodeEnv)
		}
		t.Skipf("node %s is older than 20: set %s to make this a failure", strings.TrimSpace(string(out)), requireNodeEnv)
	}
	env := node(t, lang{prefix: "ts", hookPort: freePort(t), stdPort: freePort(t)})
	dir, err := filepath.Abs("typescript")
	require.NoError(t, err)
	run(t, dir, env, "npm", "ci", "--no-audit", "--no-fund")
	run(t, dir, env, "npm", "test")
}
