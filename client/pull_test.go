package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// testLease is the lease the fake node of TestPullWorkerReusesConnections
// hands out, and the job its Handle must get.
const testLease = `{"lease":"l1","deadline":4102444800,"jobs":[{"id":"a","retry_count":-1,"perform_at":1.5,` +
	`"payloads":[{"payload":{"x":1},"score":1,"headers":{"k":"v"}},{"payload_base64":"AP8=","score":2}]}]}`

// A PullWorker without an HTTPClient keeps a connection for each of its
// loops: with Concurrency above http.DefaultTransport's 2 idle connections
// per host, its requests still reuse connections instead of opening one
// each. Its leases, from a pull or an answer's "next", decode to the jobs
// the node sent.
func TestPullWorkerReusesConnections(t *testing.T) {
	t.Parallel()
	const loops, leases = 4, 200
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/pull"):
			_, _ = io.WriteString(w, testLease)
		case strings.HasSuffix(r.URL.Path, "/answer"):
			_, _ = io.WriteString(w, `{"next":`+testLease+`}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	want := []wire.Job{{ID: "a", RetryCount: -1, PerformAt: 1.5, Payloads: []wire.Payload{
		{Data: []byte(`{"x":1}`), Score: 1, Headers: map[string]string{"k": "v"}},
		{Data: []byte{0, 0xff}, Score: 2},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got [][]wire.Job
	w := &client.PullWorker{URL: srv.URL, Queue: "q", Concurrency: loops, Logger: slog.New(slog.DiscardHandler),
		Handle: func(_ context.Context, jobs []wire.Job) (*wire.Answer, error) {
			mu.Lock()
			defer mu.Unlock()
			if got = append(got, jobs); len(got) == leases {
				cancel()
			}
			return nil, nil
		}}
	require.NoError(t, w.Run(ctx))
	require.GreaterOrEqual(t, len(got), leases)
	for _, jobs := range got {
		require.Equal(t, want, jobs)
	}
	require.LessOrEqual(t, conns.Load(), int64(2*loops), "connections opened for %d leases", len(got))
}
