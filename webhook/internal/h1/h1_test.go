package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The request's head is what net/http writes for it: request line, Host,
// User-Agent, Content-Length, then the other headers sorted by name.
func TestRequestHead(t *testing.T) {
	t.Parallel()
	u, err := url.Parse("http://example.com:8080/hook?token=a%20b")
	require.NoError(t, err)
	c := New(u, http.Header{"X-B": {" two "}, "Authorization": {"Bearer x"}, "User-Agent": {"orderly-webhook"}, "Content-Type": {"application/json"}})
	require.NotNil(t, c)
	require.Equal(t, "example.com:8080", c.addr)
	require.Equal(t, "POST /hook?token=a%20b HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: orderly-webhook\r\n"+
		"Authorization: Bearer x\r\nContent-Type: application/json\r\nX-B: two\r\n", string(c.head))

	u, err = url.Parse("http://example.com")
	require.NoError(t, err)
	c = New(u, nil)
	require.Equal(t, "example.com:80", c.addr)
	require.Equal(t, "POST / HTTP/1.1\r\nHost: example.com\r\n", string(c.head))

	for _, h := range []http.Header{{"Connection": {"close"}}, {"Host": {"x"}}, {"X-A": {"a\r\nb"}}, {"Bad Name": {"x"}}} {
		require.Nil(t, New(u, h), "%v", h)
	}
	u, err = url.Parse("https://example.com")
	require.NoError(t, err)
	require.Nil(t, New(u, nil), "https goes through net/http")
}

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

// newTestClient returns a client for srv, closed when the test ends.
func newTestClient(t *testing.T, rawURL string) *Client {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	c := New(u, http.Header{"Content-Type": {"application/json"}})
	require.NotNil(t, c)
	t.Cleanup(c.Close)
	return c
}

func ack(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.WriteHeader(http.StatusOK)
}

// Connections idle for longer than the idle timeout are closed by the
// pool's timer.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, ack)
	c := newTestClient(t, srv.URL)
	c.idleTimeout = 20 * time.Millisecond

	_, err := c.Post(context.Background(), nil, []byte("{}"), 1<<10)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.closed.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.Zero(t, c.Idle())
	c.mu.Lock()
	require.Nil(t, c.sweep, "no timer once no connection is idle")
	c.mu.Unlock()
}

// Close closes the idle connections and stops the pool's timer; a call in
// flight closes its connection when it ends, and later calls fail.
func TestClose(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var n atomic.Int64
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 3 {
			<-release
		}
		ack(w, r)
	})
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	for range 2 {
		_, err := c.Post(ctx, nil, []byte("{}"), 1<<10)
		require.NoError(t, err)
	}
	require.Equal(t, 1, c.Idle())

	done := make(chan error, 1)
	go func() { // a call in flight across Close
		_, err := c.Post(ctx, nil, []byte("{}"), 1<<10)
		done <- err
	}()
	require.Eventually(t, func() bool { return srv.opened.Load() == 1 && n.Load() == 3 }, 5*time.Second, time.Millisecond)
	c.Close()
	c.Close() // idempotent
	c.mu.Lock()
	require.Nil(t, c.sweep, "the timer is stopped")
	c.mu.Unlock()
	close(release)
	require.NoError(t, <-done)
	require.Zero(t, c.Idle(), "a call that ends after Close does not pool its connection")
	require.Eventually(t, func() bool { return srv.closed.Load() == srv.opened.Load() }, 5*time.Second, time.Millisecond)

	_, err := c.Post(ctx, nil, []byte("{}"), 1<<10)
	require.ErrorIs(t, err, ErrClosed)
}

// The body is read up to max+1 bytes; a longer body of known end is
// drained so that the connection is reused.
func TestReadBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body   string
		length int64
		max    int64
		want   string
	}{
		{"", 0, 10, ""},
		{"abc", 3, 10, "abc"},
		{"abc", -1, 10, "abc"},
		{"abcdef", 6, 3, "abcd"},
		{"abcdef", -1, 3, "abcd"},
	} {
		got, err := ReadBody(strings.NewReader(tc.body), tc.length, tc.max)
		require.NoError(t, err)
		require.Equal(t, tc.want, string(got))
	}
	_, err := ReadBody(iotestErr{}, -1, 10)
	require.Error(t, err)
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("broken") }

// rawServer answers every request on 127.0.0.1 with the bytes the test
// gives, then half-closes the connection and waits for the client to close
// it: the client reads exactly those bytes and then the end of the
// connection.
type rawServer struct {
	ln     net.Listener
	answer atomic.Pointer[[]byte]
	wg     sync.WaitGroup
}

func newRawServer(tb testing.TB) *rawServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() { // stopped by closing ln in the cleanup
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { // ends with its connection
				defer s.wg.Done()
				s.serve(c.(*net.TCPConn))
			}()
		}
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) serve(c *net.TCPConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return
	}
	_, _ = c.Write(*s.answer.Load())
	_ = c.CloseWrite()
	_, _ = io.Copy(io.Discard, c) // until the client closes
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/hook" }

// outcome is what a client made of an answer: the status and body, and
// where it failed, if it did: "head" (no answer's head), "body" (the head
// but not the whole body) or "" (no error).
type outcome struct {
	Code   int
	Status string
	Body   string
	Failed string
}

// fuzzMax is the most of a body read in FuzzH1VsNetHTTP, small enough
// that the fuzzer reaches it.
const fuzzMax = 64

func viaH1(t *testing.T, c *Client) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Post(ctx, []byte("X-Test: 1\r\n"), []byte(`{"queue":"q"}`), fuzzMax)
	c.Close() // the connection, when it is idle: the server waits for it
	switch {
	case err != nil && resp.Status == "":
		return outcome{Failed: "head"}
	case err != nil:
		return outcome{Code: resp.Code, Status: resp.Status, Failed: "body"}
	}
	return outcome{Code: resp.Code, Status: resp.Status, Body: string(resp.Body)}
}

func viaNetHTTP(t *testing.T, rawURL string) outcome {
	tr := &http.Transport{DisableCompression: true, MaxResponseHeaderBytes: MaxHeaderBytes}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(`{"queue":"q"}`))
	require.NoError(t, err)
	req.Header.Set("X-Test", "1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return outcome{Failed: "head"}
	}
	defer resp.Body.Close()
	body, err := ReadBody(resp.Body, resp.ContentLength, fuzzMax)
	if err != nil {
		return outcome{Code: resp.StatusCode, Status: resp.Status, Failed: "body"}
	}
	return outcome{Code: resp.StatusCode, Status: resp.Status, Body: string(body)}
}

// answerSeeds are answers of every shape the direct client reads, and
// some it must refuse as net/http does.
var answerSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 22\r\nContent-Type: application/json\r\n\r\n{\"failed\": {\"a\": \"x\"}}",
	"HTTP/1.1 200 OK\r\n\r\nto the end of the connection",
	"HTTP/1.0 200 OK\r\n\r\nhttp/1.0 to the end",
	"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nignored in 1.0",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n7\r\n{\"faile\r\n14\r\nd\": {\"a\": \"chunks\"}}\r\n0\r\nX-Trailer: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n1xx",
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops",
	"HTTP/1.1 101 Switching Protocols\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length:  3 \r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 418 I'm a teapot\r\nContent-Length: 5\r\n\r\nshort",
	"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 099 Low\r\n\r\n",
	"HTTP/1.1 20 OK\r\n\r\n",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
	"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
	"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 70_000) + "\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n 2\r\n\r\nab",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n\tb\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok",
	"HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum, Expires\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX: 1\n\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n bad: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nnew protocol",
	"HTTP/0.9 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nraw",
	"HTTP/0.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 +20 OK\r\n\r\n",
	"HTTP/1.1 -00 OK\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: \xff\xfe\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"SSH-2.0-OpenSSH\r\n\r\n",
	"",
	"HTTP/1.1 200 OK\r\n",
}

// FuzzH1VsNetHTTP serves the same answer bytes to the direct client and to
// net/http's transport, over loopback TCP, and requires the same outcome:
// the status, the body (its first fuzzMax+1 bytes), and whether and where
// the call failed (before the answer's head, or in its body).
func FuzzH1VsNetHTTP(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	srv := newRawServer(f)
	u, err := url.Parse(srv.url())
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, answer []byte) {
		srv.answer.Store(&answer)
		c := New(u, http.Header{"Content-Type": {"application/json"}})
		got := viaH1(t, c)
		want := viaNetHTTP(t, srv.url())
		require.Equal(t, want, got, "answer %q", answer)
	})
}
