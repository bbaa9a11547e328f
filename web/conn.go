package web

import (
	"context"
	"crypto/tls"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Serve accepts connections on ln and serves the API on them, over TLS when
// Config.TLS is set, until Shutdown or Close, after which it returns
// http.ErrServerClosed. It closes ln when it returns. Call it once.
//
// Serve adds connection limits to the per-request ones of ServeHTTP: a
// request's header must arrive within Config.ReadHeaderTimeout, a
// keep-alive connection is closed after Config.IdleTimeout without a
// request, and at most Config.MaxConnections are open at once. At that
// limit, a connection that holds its slot without a request being served
// is closed to make room, the one that has waited longest first: a
// connection whose first request header is not complete yet (a slowloris
// client sending it byte by byte, or one that sends nothing), or an idle
// keep-alive connection that never presented the token (after a probe, a
// 404 or a dashboard file). A client can thus hold no slot against
// newcomers by sending slowly; a connection that presented the token is
// never closed so. When no connection can be closed (every one is busy
// with a request, or idle with the token), the newcomer waits, accepted
// but not read, and the next ones in the listen queue (the kernel's
// backlog), until one closes, while connections already open keep being
// served. Without a token every idle connection
// may be closed so.
func (s *Server) Serve(ln net.Listener) error {
	ln = &limitListener{Listener: ln, conns: s.conns, done: make(chan struct{})}
	if s.conns.srv.TLSConfig != nil {
		// With certificates in the configuration, ServeTLS needs no files;
		// it adds HTTP/2 to the protocols offered.
		return s.conns.srv.ServeTLS(ln, "", "")
	}
	return s.conns.srv.Serve(ln)
}

// Shutdown stops Serve gracefully: it stops accepting connections, closes
// the idle ones, and waits until the requests being served are answered or
// ctx ends (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error { return s.conns.srv.Shutdown(ctx) }

// Close stops Serve at once, closing every connection.
func (s *Server) Close() error { return s.conns.srv.Close() }

// conns is Serve's HTTP server and the bookkeeping of its connections.
type conns struct {
	srv   *http.Server
	slots chan struct{} // a token per open connection

	mu    sync.Mutex             // guards conns and the state fields of each
	conns map[net.Conn]*connInfo // open connections
	// becameIdle is signalled (without blocking) when a connection becomes
	// idle, for an Accept waiting for room.
	becameIdle chan struct{}
}

// connStage is where a connection stands, as closeIdlest sees it.
type connStage uint8

const (
	// stageHeader: accepted, its first request header not complete yet
	// (or its TLS handshake not done).
	stageHeader connStage = iota
	// stageBusy: a request is being served (or the connection went to
	// HTTP/2, which serves many).
	stageBusy
	// stageIdle: waiting for its next request.
	stageIdle
	// stageClosing: picked to be closed.
	stageClosing
)

// connInfo is what the server knows of one connection.
type connInfo struct {
	// trusted is set once a request on the connection presented the
	// token: such a connection is never closed to make room.
	trusted atomic.Bool
	stage   connStage
	since   time.Time // when it was accepted, or became idle
}

// connInfoKey keys a request's *connInfo in its context.
type connInfoKey struct{}

// trust marks the connection of r as one that presented the token.
func trust(r *http.Request) {
	if ci, ok := r.Context().Value(connInfoKey{}).(*connInfo); ok {
		ci.trusted.Store(true)
	}
}

func newConns(cfg *Config, h http.Handler, logger *slog.Logger) *conns {
	c := &conns{
		slots:      make(chan struct{}, orDefault(cfg.MaxConnections, DefaultMaxConnections)),
		conns:      make(map[net.Conn]*connInfo),
		becameIdle: make(chan struct{}, 1),
	}
	c.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		ConnContext:       c.connContext,
		ConnState:         c.track,
		ErrorLog:          log.New(serverLog{logger}, "", 0),
	}
	if cfg.TLS != nil {
		tc := cfg.TLS.Clone()
		if tc.MinVersion == 0 {
			tc.MinVersion = tls.VersionTLS12
		}
		c.srv.TLSConfig = tc
	}
	return c
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// connContext registers a new connection (http.Server.ConnContext, called
// before its first state).
func (c *conns) connContext(ctx context.Context, conn net.Conn) context.Context {
	ci := &connInfo{stage: stageHeader, since: time.Now()}
	c.mu.Lock()
	c.conns[conn] = ci
	c.mu.Unlock()
	return context.WithValue(ctx, connInfoKey{}, ci)
}

// track follows the state of each connection (http.Server.ConnState).
func (c *conns) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(c.conns, conn)
		return
	}
	ci := c.conns[conn]
	if ci == nil || ci.stage == stageClosing {
		return
	}
	switch state {
	case http.StateNew:
		ci.stage = stageHeader // since: when it was accepted
	case http.StateActive:
		ci.stage = stageBusy
	case http.StateIdle:
		ci.stage, ci.since = stageIdle, time.Now()
		select {
		case c.becameIdle <- struct{}{}:
		default:
		}
	}
}

// take waits for room for one more connection, closing the connection that
// waited longest without a request being served (see closeIdlest), if
// there is one. It gives up when done is closed.
func (c *conns) take(done <-chan struct{}) error {
	for {
		select {
		case c.slots <- struct{}{}:
			return nil
		default:
		}
		c.closeIdlest()
		select {
		case c.slots <- struct{}{}:
			return nil
		case <-c.becameIdle:
		case <-done:
			return net.ErrClosed
		}
	}
}

// closeIdlest closes the connection that has waited longest without a
// request being served, if any: one whose first request header is still
// incomplete (since it was accepted), or an idle one that never presented
// the token (since it became idle). Its slot frees as it closes.
func (c *conns) closeIdlest() {
	c.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for conn, ci := range c.conns {
		closable := ci.stage == stageHeader || ci.stage == stageIdle && !ci.trusted.Load()
		if closable && (oldest == nil || ci.since.Before(since)) {
			oldest, since = conn, ci.since
		}
	}
	if oldest != nil {
		c.conns[oldest].stage = stageClosing
	}
	c.mu.Unlock()
	if oldest != nil {
		_ = oldest.Close()
	}
}

// limitListener holds each accepted connection until there is room for it.
// It accepts first and makes room after, so that a connection is closed to
// make room only for a newcomer that is there, never ahead of one (which
// would close the connection accepted last, before it could send its
// header).
type limitListener struct {
	net.Listener
	conns     *conns
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.conns.take(l.done); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &limitedConn{Conn: conn, release: sync.OnceFunc(func() { <-l.conns.slots })}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when closed.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// serverLog turns the lines net/http logs (accept errors, failed TLS
// handshakes, HTTP/2 protocol errors) into slog records: those a scanner
// or a broken client causes at will at debug level, the others as
// warnings.
type serverLog struct{ log *slog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	if strings.Contains(msg, "TLS handshake error") || strings.HasPrefix(msg, "http2: ") {
		level = slog.LevelDebug
	}
	l.log.Log(context.Background(), level, "web: HTTP server", "error", msg)
	return len(p), nil
}
