package web_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

// waitClose is how long the tests give the server to close a connection
// whose deadline (a fraction of a second here) passed: far more than it
// needs, and far less than "never".
const waitClose = 10 * time.Second

// Connections that send nothing, stop half-way through a header, or keep
// alive after an answer are closed within the header and idle timeouts:
// nobody holds a connection, and its file descriptor, for free.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := serve(t, &web.Config{Store: e.store, Token: "tok",
		ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})

	keepAlive := dial(t, addr)
	keepAlive.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	res, _, err := keepAlive.answer(waitClose)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	silent := dial(t, addr)
	halfHeader := dial(t, addr)
	halfHeader.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n")

	start := time.Now()
	for name, c := range map[string]*rawConn{"keep-alive after /healthz": keepAlive, "nothing sent": silent, "header never finished": halfHeader} {
		require.True(t, c.closedWithin(waitClose), "%s: still open after %s", name, waitClose)
		t.Logf("%s: closed (%s after the first answer)", name, time.Since(start).Round(time.Millisecond))
	}
}

// A request refused before its body is read (no token, an unknown route, a
// wrong Content-Type, a Host not served) is answered at once, even when the
// client never sends the body it announced, and its connection closes: the
// server neither waits for the body nor keeps the connection.
func TestUnsentBodyIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	withToken := serve(t, &web.Config{Store: e.store, Token: "tok", BodyReadTimeout: time.Minute})
	noToken := serve(t, &web.Config{Store: e.store, BodyReadTimeout: time.Minute})
	const auth = "Authorization: Bearer tok\r\n"
	for _, tc := range []struct {
		name, addr, request string
		status              int
	}{
		{"no token", withToken, "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n", http.StatusUnauthorized},
		{"wrong token", withToken, "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer nope\r\n", http.StatusUnauthorized},
		{"unknown route", withToken, "POST /api/v1/nowhere HTTP/1.1\r\nHost: localhost\r\n" + auth, http.StatusNotFound},
		{"wrong type", withToken, "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n" + auth, http.StatusUnsupportedMediaType},
		{"host not served", noToken, "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: evil.example\r\n", http.StatusMisdirectedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, tc.addr)
			// 100 kB announced: under the 256 KiB net/http would read to
			// keep the connection, over what is sent.
			c.send(tc.request + "Content-Length: 100000\r\n\r\n[")
			start := time.Now()
			res, body, err := c.answer(waitClose)
			require.NoError(t, err, "no answer within %s", waitClose)
			t.Logf("answered %d after %s: %s", res.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(body))
			require.Equal(t, tc.status, res.StatusCode, body)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"))
			require.True(t, res.Close, "Connection: close")
			require.True(t, c.closedWithin(waitClose))
		})
	}
	e.requireEmpty("q")
}

// A refusal closes the connection even without a body: a client without
// the token gets no keep-alive to hold.
func TestRefusalClosesConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := serve(t, &web.Config{Store: e.store, Token: "tok"})
	c := dial(t, addr)
	c.send("GET /api/v1/queues HTTP/1.1\r\nHost: localhost\r\n\r\n")
	res, _, err := c.answer(waitClose)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.True(t, res.Close)
	require.True(t, c.closedWithin(waitClose))
}

// A body that does not arrive within BodyReadTimeout is answered 408 and
// its connection closed; nothing of it is stored.
func TestServeCutsSlowBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := serve(t, &web.Config{Store: e.store, Token: "tok", BodyReadTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	c.send("POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\n" +
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n[{\"id\": \"slow-1\"}")
	start := time.Now()
	res, body, err := c.answer(waitClose)
	require.NoError(t, err, "no answer within %s", waitClose)
	t.Logf("answered %d after %s: %s", res.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(body))
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode, body)
	require.Contains(t, body, "did not arrive within 300ms")
	require.True(t, res.Close)
	require.True(t, c.closedWithin(waitClose))
	e.requireEmpty("q")
}

// At the connection limit, an idle connection that never presented the
// token is closed to make room, and so is a connection still sending its
// first header; a connection that presented the token, or is busy with a
// request, keeps being served; and when no connection can be closed, a new
// one waits until one closes.
func TestServeConnectionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := serve(t, &web.Config{Store: e.store, Token: "tok", MaxConnections: 3,
		ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute, BodyReadTimeout: time.Minute})
	get := func(c *rawConn, path string, token bool) int {
		t.Helper()
		req := "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n"
		if token {
			req += "Authorization: Bearer tok\r\n"
		}
		c.send(req + "\r\n")
		res, body, err := c.answer(waitClose)
		require.NoError(t, err)
		require.False(t, res.Close, "kept alive: %s", body)
		return res.StatusCode
	}

	trusted := dial(t, addr) // a client with the token, idle between requests
	require.Equal(t, http.StatusOK, get(trusted, "/api/v1/queues", true))
	probe := dial(t, addr) // idle after a probe, without the token
	require.Equal(t, http.StatusOK, get(probe, "/healthz", false))
	busy := dial(t, addr) // a request being served: its body is on its way
	busy.send("POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\n" +
		"Content-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
	// The server asks for the body once it has read the header.
	res, _, err := busy.answer(waitClose)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, res.StatusCode)
	busy.send("[")

	// The limit is reached: the probe's idle connection makes room.
	newcomer := dial(t, addr)
	require.Equal(t, http.StatusOK, get(newcomer, "/healthz", false))
	require.True(t, probe.closedWithin(waitClose), "the idle connection without the token was closed")

	// The newcomer goes idle and makes room the same way, for a client
	// that sends half a header...
	slow := dial(t, addr)
	slow.send("GET /healthz HTTP/1.1\r\n")
	require.True(t, newcomer.closedWithin(waitClose))
	// ...which makes room in turn, as the oldest connection without a
	// request being served.
	fresh := dial(t, addr)
	require.Equal(t, http.StatusOK, get(fresh, "/api/v1/queues", true))
	require.True(t, slow.closedWithin(waitClose), "the connection still sending its header was closed")

	// Nothing can be closed now (two connections with the token, one
	// busy): a new connection waits...
	waiting := dial(t, addr)
	waiting.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	_, _, err = waiting.answer(300 * time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "no answer while the limit holds")
	// ...while the connections with the token keep being served.
	for range 3 {
		require.Equal(t, http.StatusOK, get(trusted, "/api/v1/queues/q", true))
		require.Equal(t, http.StatusOK, get(fresh, "/api/v1/queues/q", true))
	}
	// A connection closes: the waiting one is served.
	require.NoError(t, busy.Close())
	res, body, err := waiting.answer(waitClose)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
}

// A slowloris attack at the connection limit (every connection sending its
// header a line at a time, never finishing it) does not keep a new client
// out: the oldest such connection is closed to make room, and the new
// client's request is answered, long before any header timeout.
func TestServeEvictsSlowHeadersAtLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const limit = 8
	for _, token := range []string{"", "tok"} {
		addr := serve(t, &web.Config{Store: e.store, Token: token, MaxConnections: limit,
			ReadHeaderTimeout: time.Hour, IdleTimeout: time.Hour})
		slow := make([]*rawConn, limit)
		for i := range slow {
			slow[i] = dial(t, addr)
			slow[i].send("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
		}
		for round := range 3 {
			c := dial(t, addr)
			c.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
			res, body, err := c.answer(waitClose)
			require.NoError(t, err, "token %q, round %d: a new connection was not served while the slow ones hold the limit", token, round)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			// The connection closed for it was the oldest slow one.
			require.True(t, slow[round].closedWithin(waitClose), "round %d", round)
		}
	}
}
