package main

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/nodetest"
	"github.com/orderlyhq/orderly/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.AtExit(nodetest.Cleanup)
	redistest.Main(m)
}

// TestRemoteEnqueue runs the example, as a user would, against a node
// process: the job goes in by actor message through protoactor remote and
// the node handles it.
//
// The example runs as its own process each time: protoactor's remote sets
// gRPC's process-wide logger on every start, which races with the gRPC
// goroutines of an earlier remote in the same process.
func TestRemoteEnqueue(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "remote-enqueue")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	actorAddr := "127.0.0.1:" + strconv.Itoa(port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--actor-addr", actorAddr}})
	n.WaitReady()

	example := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}

	got, err := example("--http", strings.TrimPrefix(n.HTTP, "http://"), "--id", "order-9", "--payload", `{"state":"paid"}`)
	require.NoError(t, err, got)
	require.Equal(t, "enqueued 1 job(s) into default through "+actorAddr+"\n", got)
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=order-9") }, 10*time.Second, 10*time.Millisecond)

	// Headers travel in the message and reach the handler (docs/contract.md §10).
	got, err = example("--actor", actorAddr, "--id", "order-h", "--payload", `1`, "--header", "tenant=acme", "--header", "k=v")
	require.NoError(t, err, got)
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), `headers0="k=v tenant=acme"`) }, 10*time.Second, 10*time.Millisecond)

	got, err = example("--actor", actorAddr, "--queue", "nope", "--id", "x")
	require.Error(t, err)
	require.Contains(t, got, "CODE_UNKNOWN_QUEUE")
	got, err = example("--actor", actorAddr, "--id", "")
	require.Error(t, err)
	require.Contains(t, got, "--id is required")
}

// A node with an actor token refuses a client without it, or with another
// one, and stores nothing; the client with the token enqueues.
func TestRemoteEnqueueToken(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "remote-enqueue")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	actorAddr := "127.0.0.1:" + strconv.Itoa(port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--actor-addr", actorAddr, "--actor-token", "s3cret"},
		Config: "queues:\n  - name: default\n    handler: {type: log}\n"})
	n.WaitReady()
	example := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--actor", actorAddr, "--timeout", "3s"}, args...)...).CombinedOutput()
		return string(out), err
	}

	got, err := example("--id", "anonymous")
	require.Error(t, err, got)
	require.Contains(t, got, "no answer")
	got, err = example("--id", "guessed", "--token", "guess")
	require.Error(t, err, got)
	require.Contains(t, got, "no answer")
	require.Contains(t, n.Logs(), "actor remote refused a connection without a valid token")
	code, body := n.Do("GET", "/api/v1/queues/default", nil)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"length":0`, string(body))

	got, err = example("--id", "with-token", "--token", "s3cret", "--timeout", "30s")
	require.NoError(t, err, got)
	require.Contains(t, got, "enqueued 1 job(s)")
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=with-token") }, 30*time.Second, 10*time.Millisecond)
	require.NotContains(t, n.Logs(), "job_id=anonymous")
	require.NotContains(t, n.Logs(), "job_id=guessed")
}
