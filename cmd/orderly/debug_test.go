package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// SIGUSR1 makes a node write a debug dump to its log (each shard's state
// with the ids in flight, then every goroutine's stack) and keep serving;
// debug_addr serves pprof on its own listener, which is off by default.
func TestDebugDumpAndListener(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rcv := nodetest.NewReceiver(t, func(*webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{Hold: release} })
	defer close(release)
	port, err := redistest.FreePort()
	require.NoError(t, err)
	debugURL := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", port)
	n := nodetest.Start(t, nodetest.Options{Config: fmt.Sprintf(`
node: {shutdown_timeout: 1s, debug_addr: ":%d"}
queues:
  - {name: orders, shards: 2, handler: {type: http, url: %q, timeout: 30s}}
`, port, rcv.URL)})
	n.WaitReady()
	enqueue(t, n, `[{"id": "held-1"}]`)
	eventually(t, "the call of held-1 is running", func() bool { return rcv.Active() == 1 })

	n.Signal(syscall.SIGUSR1)
	eventually(t, "the dump is written", func() bool { return strings.Contains(n.Logs(), "debug dump ends") })
	logs := n.Logs()
	require.Regexp(t, `msg="debug dump: shard" queue=orders shard=\d epoch=\d+ serving=true paused=false in_flight=1 ids=held-1`, logs)
	require.Regexp(t, `msg="debug dump: shard" queue=orders shard=\d epoch=\d+ serving=true paused=false in_flight=0 ids=""`, logs)
	require.Contains(t, logs, "goroutine 1 [")
	require.Contains(t, logs, "cmd/internal/server.wait(")

	// The node keeps serving.
	code, _ := n.Do("GET", "/healthz", nil)
	require.Equal(t, http.StatusOK, code)
	enqueue(t, n, `[{"id": "after-dump"}]`)
	code, body := n.Do("GET", "/api/v1/queues/orders/jobs/after-dump", nil)
	require.Equal(t, http.StatusOK, code, "%s", body)

	res, err := http.Get(debugURL)
	require.NoError(t, err)
	index, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, string(index), pprofIndex)
	res, err = http.Get(debugURL + "goroutine?debug=1")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	// Not on the API's listener (which answers the dashboard there).
	_, body = n.Do("GET", "/debug/pprof/", nil)
	require.NotContains(t, string(body), pprofIndex)
}

// pprofIndex is a line of net/http/pprof's index page.
const pprofIndex = "Types of profiles available"

// Without debug_addr there is no debug listener: the API's port does not
// serve pprof, and the node opens no other port for it.
func TestDebugListenerOffByDefault(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{})
	_, body := n.Do("GET", "/debug/pprof/", nil)
	require.NotContains(t, string(body), pprofIndex)
	require.NotContains(t, n.Logs(), "debug listener")
}
