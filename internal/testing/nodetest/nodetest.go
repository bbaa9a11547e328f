// Package nodetest runs real node processes for end-to-end and cluster
// tests: it builds cmd/orderly once per test binary, starts nodes on free
// ports of 127.0.0.1, sends them signals or SIGKILL, and talks to their
// HTTP API. NewReceiver (receiver.go) starts a webhook receiver
// (webhook/webhooktest) that records what the nodes delivered.
package nodetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// build is one build of cmd/orderly, made once per test binary.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	buildDirOnce sync.Once
	buildDir     string
	builds       = map[string]*build{"": {}, "chaos": {}} // by build tag
)

// Binary builds cmd/orderly (with -race when the tests use it) and returns the
// path of the binary. It is built once per test binary.
func Binary(t testing.TB) string { return binary(t, "") }

// ChaosBinary builds cmd/orderly with the chaos tag: SIGUSR1 cuts its gossip
// off, SIGUSR2 restores it (cmd/internal/chaos).
func ChaosBinary(t testing.TB) string { return binary(t, "chaos") }

func binary(t testing.TB, tag string) string {
	t.Helper()
	b := builds[tag]
	b.once.Do(func() {
		buildDirOnce.Do(func() { buildDir, b.err = os.MkdirTemp("", "orderly-bin-") })
		if b.err != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..", "..") // internal/testing/nodetest
		b.path = filepath.Join(buildDir, "orderly"+tag)
		args := []string{"build", "-o", b.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		if tag != "" {
			args = append(args, "-tags", tag)
		}
		cmd := exec.Command("go", append(args, "./cmd/orderly")...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build ./cmd/orderly: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Cleanup removes the built binaries; call it from TestMain after the tests.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Options start a node.
type Options struct {
	// Name of the node [a unique "n<k>"].
	Name string
	// Redis URL; empty runs the embedded store.
	Redis string
	// Config is the YAML config file's content; empty means none.
	Config string
	// Args are extra command-line arguments.
	Args []string
	// Env are extra environment variables ("KEY=value").
	Env []string
	// HTTPPort is the HTTP port [a free one]; set it to restart a node on
	// the same address.
	HTTPPort int
	// GossipPort is the gossip port [a free one].
	GossipPort int
	// Chaos runs the chaos build (ChaosBinary).
	Chaos bool
	// Binary runs this binary instead of the current build (for example
	// ReleaseBinary's).
	Binary string
}

// Node is a running node process.
type Node struct {
	t    testing.TB
	Name string
	// HTTP is the base URL of its HTTP API.
	HTTP string
	Port int
	// Gossip is its gossip address, a seed for others.
	Gossip string
	cmd    *exec.Cmd
	logs   *LogBuffer
	done   chan struct{} // closed when the process exited
	err    error         // its exit error, once done
}

// httpClient talks to nodes without keeping connections, so that no
// connection goroutine outlives a test.
var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

var seq struct {
	sync.Mutex
	n int
}

// Start starts a node and waits until its HTTP API answers /healthz.
func Start(t testing.TB, o Options) *Node {
	t.Helper()
	n := Launch(t, o)
	n.WaitHealthy()
	return n
}

// Launch starts a node without waiting for it.
func Launch(t testing.TB, o Options) *Node {
	t.Helper()
	bin := o.Binary
	switch {
	case bin != "":
	case o.Chaos:
		bin = ChaosBinary(t)
	default:
		bin = Binary(t)
	}
	if o.Name == "" {
		seq.Lock()
		seq.n++
		o.Name = "n" + strconv.Itoa(seq.n)
		seq.Unlock()
	}
	port := o.HTTPPort
	if port == 0 {
		p, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		port = p
	}
	gossip := o.GossipPort
	if gossip == 0 {
		p, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		gossip = p
	}
	args := []string{"--name", o.Name, "--http", "127.0.0.1:" + strconv.Itoa(port), "--bind", "127.0.0.1:" + strconv.Itoa(gossip), "--log-level", "debug"}
	if o.Redis != "" {
		args = append(args, "--redis", o.Redis)
	}
	if o.Config != "" {
		path := filepath.Join(t.TempDir(), "orderly.yaml")
		if err := os.WriteFile(path, []byte(o.Config), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	args = append(args, o.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(), o.Env...)
	logs := &LogBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node %s: %v", o.Name, err)
	}
	n := &Node{t: t, Name: o.Name, HTTP: "http://127.0.0.1:" + strconv.Itoa(port), Port: port,
		Gossip: "127.0.0.1:" + strconv.Itoa(gossip), cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() {
		n.err = cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		n.Kill()
		if t.Failed() {
			t.Logf("logs of node %s:\n%s", n.Name, n.Logs())
		}
	})
	return n
}

// cleanEnv is the test's environment without ORDERLY_* variables, so that
// a developer's settings do not leak into the nodes.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORDERLY_") {
			out = append(out, kv)
		}
	}
	return out
}

// WaitHealthy waits until /healthz answers 200.
func (n *Node) WaitHealthy() {
	n.t.Helper()
	n.waitFor("/healthz", 30*time.Second)
}

// WaitReady waits until /readyz answers 200.
func (n *Node) WaitReady() {
	n.t.Helper()
	n.waitFor("/readyz", 30*time.Second)
}

func (n *Node) waitFor(path string, timeout time.Duration) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-n.done:
			n.t.Fatalf("node %s exited (%v) while waiting for %s:\n%s", n.Name, n.err, path, n.Logs())
		default:
		}
		if code, _ := n.Do("GET", path, nil); code == http.StatusOK {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.t.Fatalf("node %s: %s not OK within %s:\n%s", n.Name, path, timeout, n.Logs())
}

// Do sends a request to the node's HTTP API and returns the status and body
// (status 0 when the node does not answer).
func (n *Node) Do(method, path string, body []byte) (int, []byte) {
	code, b, _ := n.Try(method, path, body)
	return code, b
}

// Try is Do that also returns the transport error when the node did not
// answer. errors.Is(err, syscall.ECONNREFUSED) means the request never
// reached the node; any other error leaves open whether it was applied.
func (n *Node) Try(method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.HTTP+path, bytes.NewReader(body))
	if err != nil {
		n.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s on node %s: %w", method, path, n.Name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// Signal sends sig to the node.
func (n *Node) Signal(sig syscall.Signal) {
	_ = n.cmd.Process.Signal(sig)
}

// Kill kills the node with SIGKILL and waits for it.
func (n *Node) Kill() {
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// Wait waits for the node to exit and returns its exit code (-1 on timeout).
func (n *Node) Wait(timeout time.Duration) int {
	select {
	case <-n.done:
	case <-time.After(timeout):
		return -1
	}
	if n.err == nil {
		return 0
	}
	if ee, ok := n.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// Logs returns what the node wrote so far.
func (n *Node) Logs() string { return n.logs.String() }

// LogBuffer collects log output written by several goroutines (a node
// process's pipes, a server's handlers). The zero value is ready to use.
type LogBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
