package web_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

// serve runs a web.Server made from cfg with Serve on a free port of
// 127.0.0.1, and closes it when the test ends. It returns the address.
func serve(t *testing.T, cfg *web.Config) string {
	t.Helper()
	return serveOn(t, "127.0.0.1:0", cfg)
}

// serveOn is serve on the listen address addr.
func serveOn(t *testing.T, addr string, cfg *web.Config) string {
	t.Helper()
	srv, err := web.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return ln.Addr().String()
}

// rawConn is a client connection that speaks HTTP/1.1 by hand, for the
// clients net/http will not be: slow, silent, or gone half-way.
type rawConn struct {
	t testing.TB
	net.Conn
	r *bufio.Reader
}

func dial(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	_, err := io.WriteString(c, s)
	require.NoError(c.t, err)
}

// answer reads one answer and its body, waiting at most wait.
func (c *rawConn) answer(wait time.Duration) (*http.Response, string, error) {
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(wait)))
	res, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, string(b), err
}

// closedWithin reports whether the server closes the connection within
// wait, discarding whatever it sends before.
func (c *rawConn) closedWithin(wait time.Duration) bool {
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(wait)))
	_, err := io.Copy(io.Discard, c.r)
	switch {
	case err == nil, errors.Is(err, syscall.ECONNRESET):
		return true
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false
	}
	c.t.Fatalf("reading until the connection closes: %v", err)
	return false
}
