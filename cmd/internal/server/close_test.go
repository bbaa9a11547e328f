package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// Run closes the webhook senders once the node has stopped: the receiver
// sees the kept-alive connection closed when Run returns, not when its
// idle timeout (90 s) would have closed it.
func TestRunClosesWebhookConnections(t *testing.T) {
	t.Parallel()
	var calls, opened, closed atomic.Int64
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	rcv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	rcv.Start()
	defer rcv.Close()

	db := redistest.New(t)
	file := filepath.Join(t.TempDir(), "orderly.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `node:
  name: n1
  http: 127.0.0.1:0
  bind: 127.0.0.1:0
  redis: redis://%s/0
  redis_prefix: %s
  log_level: warn
queues:
  - name: q
    shards: 1
    handler: {type: http, url: %q}
`, db.Addr, db.Prefix, rcv.URL), 0o600))
	cfg, err := config.Load([]string{"--config", file}, nil, nil)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, io.Discard, make(chan os.Signal)) }()
	stopped := false
	t.Cleanup(func() { // Run's goroutine ends before the test does
		cancel()
		if !stopped {
			<-done
		}
	})

	store, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // once the node registered the queue
		return store.Enqueue(context.Background(), "q", []persistence.NewJob{{ID: "a", Payload: []byte(`{}`)}}) == nil
	}, 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 20*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, closed.Load(), "kept alive between calls")

	cancel()
	select {
	case err := <-done:
		stopped = true
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	require.Eventually(t, func() bool { return closed.Load() == opened.Load() }, 5*time.Second, 10*time.Millisecond,
		"the sender's idle connection is closed with the node")
}
