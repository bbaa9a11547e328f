package webhook

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/stretchr/testify/require"
)

// countingServer is an httptest server that counts the connections it
// accepted and those that closed.
type countingServer struct {
	*httptest.Server
	opened, closed atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// The sender's own client to a plain http URL sends on the caller's
// goroutine (package h1); a client of the caller's, Config.NetHTTP, an
// https URL or a header that changes the framing take net/http.
func TestDirectClientChosen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cfg    Config
		direct bool
	}{
		{name: "http", cfg: Config{URL: "http://127.0.0.1:9/hook?x=1"}, direct: true},
		{name: "headers", cfg: Config{URL: "http://127.0.0.1:9/", Header: http.Header{"Authorization": {"Bearer x"}}}, direct: true},
		{name: "https", cfg: Config{URL: "https://127.0.0.1:9/"}},
		{name: "own client", cfg: Config{URL: "http://127.0.0.1:9/", Client: &http.Client{}}},
		{name: "net/http", cfg: Config{URL: "http://127.0.0.1:9/", NetHTTP: true}},
		{name: "connection header", cfg: Config{URL: "http://127.0.0.1:9/", Header: http.Header{"Connection": {"close"}}}},
		{name: "host header", cfg: Config{URL: "http://127.0.0.1:9/", Header: http.Header{"Host": {"other"}}}},
		{name: "invalid header value", cfg: Config{URL: "http://127.0.0.1:9/", Header: http.Header{"X-A": {"a\r\nb"}}}},
		{name: "ipv6 zone", cfg: Config{URL: "http://[fe80::1%25eth0]:9/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSender(t, &tc.cfg)
			require.Equal(t, tc.direct, s.direct != nil)
		})
	}
}

// One connection carries every answer whose end is known and read: empty,
// partial failure, an error with a body longer than what is read of it, a
// chunked body, 204, one after a 1xx answer.
func TestDirectClientReusesConnections(t *testing.T) {
	t.Parallel()
	answers := []string{"ack", "partial", "error", "large", "chunked", "no-content", "early-hints", "ack"}
	var n atomic.Int64
	srv := newCountingServer(t, func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		switch answers[n.Add(1)-1] {
		case "partial":
			_, _ = io.WriteString(w, `{"failed": {"a": "x"}}`)
		case "error":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, strings.Repeat("e", 20_000)) // more than is read
		case "large":
			_, _ = io.WriteString(w, strings.Repeat(" ", 20_000)) // more than max_response_bytes
		case "chunked":
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"failed": {"a": "`+strings.Repeat("x", 3000)+`"}}`)
		case "no-content":
			w.WriteHeader(http.StatusNoContent)
		case "early-hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, `{"failed": {"a": "hinted"}}`)
		}
	})
	s := newTestSender(t, &Config{URL: srv.URL, MaxResponseBytes: 10_000})
	require.NotNil(t, s.direct)

	var errs []error
	for range answers {
		errs = append(errs, s.Handle(context.Background(), testBatch("a")))
	}

	require.NoError(t, errs[0])
	for _, i := range []int{1, 4, 6} {
		pf, ok := orderly.AsPartialFailure(errs[i])
		require.True(t, ok, "answer %d: %v", i, errs[i])
		require.Contains(t, pf.Failed, "a")
	}
	require.EqualError(t, failedIDs(t, errs[6])["a"], "hinted")
	require.ErrorContains(t, errs[2], "answered 500 Internal Server Error: eeee")
	require.ErrorContains(t, errs[3], "larger than max_response_bytes")
	require.NoError(t, errs[5])
	require.NoError(t, errs[7])
	require.EqualValues(t, 1, srv.opened.Load())
}

// failedIDs returns the ids that err fails, which must be an
// *orderly.PartialFailure.
func failedIDs(t *testing.T, err error) map[string]error {
	t.Helper()
	p, ok := orderly.AsPartialFailure(err)
	require.True(t, ok, "%v", err)
	return p.Failed
}

// A connection that the receiver closed while it was idle is not used: the
// next request goes on a new one and succeeds.
func TestDirectClientSkipsClosedIdleConnections(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, answerWith(http.StatusOK, ""))
	s := newTestSender(t, &Config{URL: srv.URL})

	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	srv.CloseClientConnections()
	require.Eventually(t, func() bool { return srv.closed.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	require.NoError(t, s.Handle(context.Background(), testBatch("a")))

	require.EqualValues(t, 2, srv.opened.Load())
}

// An answer with "Connection: close" closes its connection; so does one
// that the receiver ends by closing the connection.
func TestDirectClientConnectionClose(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, `{"failed": {"a": "x"}}`)
	})
	s := newTestSender(t, &Config{URL: srv.URL})
	for range 3 {
		require.Contains(t, failedIDs(t, s.Handle(context.Background(), testBatch("a"))), "a")
	}
	require.EqualValues(t, 3, srv.opened.Load())
	require.Zero(t, s.direct.Idle())

	raw := newRawReceiver(t, "HTTP/1.0 200 OK\r\n\r\n{\"failed\": {\"a\": \"eof\"}}")
	s = newTestSender(t, &Config{URL: raw.url})
	for range 2 {
		require.EqualError(t, failedIDs(t, s.Handle(context.Background(), testBatch("a")))["a"], "eof")
	}
	require.EqualValues(t, 2, raw.conns.Load())
}

// rawReceiver answers every request with the same bytes and closes the
// connection.
type rawReceiver struct {
	url   string
	conns atomic.Int64
}

func newRawReceiver(t *testing.T, answer string) *rawReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &rawReceiver{url: "http://" + ln.Addr().String() + "/hook"}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // stopped by closing ln in the cleanup
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.conns.Add(1)
			wg.Add(1)
			go func() { // ends with its connection
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, answer)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return r
}

// Answers that break the protocol fail the request with what was wrong.
func TestDirectClientBadAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer, err string
	}{
		{name: "short body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", err: "reading the answer of %s: unexpected EOF"},
		{name: "no head", answer: "", err: "posting to %s: unexpected EOF"},
		{name: "not http", answer: "SSH-2.0-OpenSSH\r\n\r\n", err: `posting to %s: malformed HTTP response "SSH-2.0-OpenSSH"`},
		{name: "bad length", answer: "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", err: `posting to %s: bad Content-Length "x"`},
		{name: "two lengths", answer: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", err: `posting to %s: http: message cannot contain multiple Content-Length headers`},
		{name: "chunked, bad length", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n0\r\n\r\n", err: `posting to %s: bad Content-Length "x"`},
		{name: "cut trailer", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n", err: "reading the answer of %s: http: unexpected EOF reading trailer"},
		{name: "gzip", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", err: `posting to %s: unsupported transfer encoding: "gzip"`},
		{name: "huge head", answer: "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 70_000) + "\r\n\r\n", err: "posting to %s: net/http: server response headers exceeded 65536 bytes; aborted"},
		{name: "status", answer: "HTTP/1.1 418 I'm a teapot\r\nContent-Length: 5\r\n\r\nshort", err: "webhook: %s answered 418 I'm a teapot: short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := newRawReceiver(t, tc.answer)
			s := newTestSender(t, &Config{URL: raw.url})
			err := s.Handle(context.Background(), testBatch("a"))
			require.Error(t, err)
			require.ErrorContains(t, err, strings.Replace(tc.err, "%s", raw.url, 1))
		})
	}
}

// Answers that net/http reads are read alike, by both clients: a chunked
// body (with a trailer, a valid Content-Length beside it ignored), a
// Transfer-Encoding that HTTP/1.0 ignores, a body to the connection's end,
// 1xx answers before the final one.
func TestDirectClientOddAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer, failed string
	}{
		{name: "chunked", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" +
			"7\r\n{\"faile\r\n14\r\nd\": {\"a\": \"chunks\"}}\r\n0\r\nX-Trailer: 1\r\n\r\n", failed: "chunks"},
		{name: "http/1.0 transfer-encoding", answer: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{\"failed\": {\"a\": \"raw\"}}", failed: "raw"},
		{name: "to the end", answer: "HTTP/1.1 200 OK\r\n\r\n{\"failed\": {\"a\": \"end\"}}", failed: "end"},
		{name: "informational", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n" +
			"HTTP/1.1 200 OK\r\nContent-Length: 24\r\n\r\n{\"failed\": {\"a\": \"1xx\"}}", failed: "1xx"},
	} {
		for _, netHTTP := range []bool{false, true} {
			t.Run(tc.name+"/net/http="+strconv.FormatBool(netHTTP), func(t *testing.T) {
				t.Parallel()
				raw := newRawReceiver(t, tc.answer)
				s := newTestSender(t, &Config{URL: raw.url, NetHTTP: netHTTP})
				require.Equal(t, !netHTTP, s.direct != nil)
				require.EqualError(t, failedIDs(t, s.Handle(context.Background(), testBatch("a")))["a"], tc.failed)
			})
		}
	}
}

// Requests in flight at once each get a connection of their own; the
// connections are reused afterwards.
func TestDirectClientConcurrentCalls(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, answerWith(http.StatusOK, ""))
	s := newTestSender(t, &Config{URL: srv.URL})
	const callers, calls = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for range callers {
		wg.Go(func() {
			for range calls {
				errs <- s.Handle(context.Background(), testBatch("a"))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, srv.opened.Load(), int64(callers))
	require.LessOrEqual(t, s.direct.Idle(), callers)
}

// A call cancelled while the receiver works closes its connection (the
// answer may still come on it); the next call dials a new one.
func TestDirectClientCancelledConnectionNotReused(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := newCountingServer(t, func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body) // then the server sees the client go
		if n.Add(1) == 1 {
			<-req.Context().Done()
		}
	})
	s := newTestSender(t, &Config{URL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	require.ErrorIs(t, s.Handle(ctx, testBatch("a")), context.Canceled)

	require.NoError(t, s.Handle(context.Background(), testBatch("a")))
	require.EqualValues(t, 2, srv.opened.Load())
}
