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
// each. Handle runs in rounds, every loop's at once, so that every loop's
// connection is idle at the same time. The leases,
// from a pull or an answer's "next", decode to the jobs the node sent.
func TestPullWorkerReusesConnections(t *testing.T) {
	t.Parallel()
	const loops, leases = 4, 500
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
	var (
		mu      sync.Mutex
		got     [][]wire.Job
		waiting int
		round   = make(chan struct{}) // closed when every loop is in Handle
		stop    = make(chan struct{}) // closed when the test has its leases: no more rounds
	)
	w := &client.PullWorker{URL: srv.URL, Queue: "q", Concurrency: loops, Logger: slog.New(slog.DiscardHandler),
		Handle: func(_ context.Context, jobs []wire.Job) (*wire.Answer, error) {
			mu.Lock()
			if got = append(got, jobs); len(got) == leases {
				close(stop)
				cancel()
			}
			this := round
			if waiting++; waiting == loops {
				close(round)
				round, waiting = make(chan struct{}), 0
			}
			mu.Unlock()
			select {
			case <-this:
			case <-stop:
			}
			return nil, nil
		}}
	require.NoError(t, w.Run(ctx))
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(got), leases)
	for _, jobs := range got {
		require.Equal(t, want, jobs)
	}
	t.Logf("connections %d for %d leases", conns.Load(), len(got))
	require.LessOrEqual(t, conns.Load(), int64(2*loops), "connections opened for %d leases", len(got))
}

// A lease that does not decode is an error of Pull, named as encoding/json
// decoding a PullLease names it.
func TestPullWorkerBadLease(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{
		`{"lease":"l","jobs":[{"id":"a","payloads":[{"score":1}]}]}`:               "client: decoding a lease: wire: payloads[0]: payload or payload_base64 required",
		`{"lease":"l","jobs":[{"id":"a","payloads":[{"payload":1,"score":"x"}]}]}`: "client: decoding a lease: json: cannot unmarshal string into Go struct field PullLease.jobs.payloads.score of type float64",
		`{"lease":"l","deadline":"x","jobs":[]}`:                                   "client: decoding a lease: json: cannot unmarshal string into Go struct field PullLease.deadline of type float64",
	}
	for body, want := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, body)
		}))
		w := &client.PullWorker{URL: srv.URL, Queue: "q"}
		l, err := w.Pull(context.Background())
		srv.Close()
		require.Nil(t, l)
		require.EqualError(t, err, want)
	}
}

// readBody reads a body of a Content-Length into one buffer, as io.ReadAll
// would read it: all of it, a longer one too, and a short one is an error.
func TestReadBodyAsReadAll(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body    string
		length  int64
		want    string
		wantErr bool
	}{
		{body: `{"lease":"a"}`, length: 13, want: `{"lease":"a"}`},
		{body: `{"lease":"a"}`, length: -1, want: `{"lease":"a"}`},
		{body: `{"lease":"a"}xx`, length: 13, want: `{"lease":"a"}xx`},
		{body: `{"lea`, length: 13, wantErr: true},
	} {
		resp := &http.Response{Body: io.NopCloser(&shortReader{s: c.body, short: c.length > int64(len(c.body))}), ContentLength: c.length}
		got, err := client.ReadBody(resp, 1<<20)
		if c.wantErr {
			require.Error(t, err, c.body)
			continue
		}
		require.NoError(t, err, c.body)
		require.Equal(t, c.want, string(got))
	}
}

// shortReader reads s, then io.ErrUnexpectedEOF when short (a body that
// ended before its Content-Length, as net/http reports it), else io.EOF.
type shortReader struct {
	s     string
	short bool
}

func (r *shortReader) Read(p []byte) (int, error) {
	if r.s == "" {
		if r.short {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}
