// Package h1 is the webhook sender's direct HTTP/1.1 client: it sends a
// POST to a plain http:// URL on the caller's goroutine, over a pool of
// kept-alive connections, and reads the answer as net/http does. It does
// what the default http.Transport does for such a request, without the two
// goroutines per connection (readLoop, writeLoop) that each request hands
// off to and back, and without building an http.Request, an http.Response
// and their header maps:
//
//   - a connection is dialed (10 s timeout, TCP keep-alive 30 s) when no
//     idle one is left; at most MaxIdle stay idle, each for at most
//     IdleTimeout, and one the receiver closed while it was idle is found
//     before the request is written (a non-blocking look at the socket)
//     and replaced;
//   - the request is written in one call (head and body), with the headers
//     net/http writes for it;
//   - the answer's status line and headers are bounded by MaxHeaderBytes
//     (those of the 1xx answers skipped before the final one included); the body is delimited
//     by Content-Length, chunked encoding or the end of the connection, and
//     the connection is reused when the answer allows it and its body was
//     read to the end (up to MaxDrainBytes past what the caller reads is
//     drained for that);
//   - ctx bounds everything: its deadline is the connection's, and its
//     cancellation interrupts the dial, the write or the read at once; a
//     connection whose call was interrupted is closed, never reused.
//
// The client starts no goroutine: the pool's sweep is a timer. Close
// closes the idle connections and stops the timer. FuzzH1VsNetHTTP holds
// the client to net/http's reading of the same answer bytes.
package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Limits of the client, as the sender's net/http transport has them.
const (
	// MaxHeaderBytes bounds an answer's status line and headers.
	MaxHeaderBytes = 64 << 10
	// MaxIdle is the most connections kept idle.
	MaxIdle = 32
	// IdleTimeout is how long a connection stays idle before it is closed.
	IdleTimeout = 90 * time.Second
	// MaxDrainBytes is the most of an unread body discarded so that its
	// connection can be reused; a longer body closes the connection
	// instead.
	MaxDrainBytes = 64 << 10
	// maxCopiedBody is the largest request whose head and body are
	// written together, copied into one buffer of the connection's.
	maxCopiedBody = 64 << 10
)

// ErrClosed is the error of Post after Close.
var ErrClosed = errors.New("h1: client closed")

// Client sends POSTs to one URL. Its methods are safe for concurrent use.
type Client struct {
	addr string // host:port dialed
	head []byte // request line, Host, User-Agent and the static headers
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	maxIdle     int
	idleTimeout time.Duration

	mu     sync.Mutex  // guards idle, sweep and closed
	idle   []*conn     // most recently used last
	sweep  *time.Timer // closes idle connections past idleTimeout; nil when none is idle
	closed bool
}

// conn is one connection of a Client.
type conn struct {
	nc        net.Conn
	br        *bufio.Reader
	rc        syscall.RawConn // nc's, to look at it while idle; nil if none
	idleSince time.Time
	deadline  time.Time // nc's
	interrupt func()    // sets nc's deadline in the past
	peek      func(fd uintptr) bool
	peeked    bool   // what peek found: nothing to read yet
	head      []byte // scratch for a request's head and small body
	fold      []byte // scratch for a field folded over lines
	fixed     fixedReader
	chunked   chunkedReader
}

// Response is the final answer to a POST.
type Response struct {
	// Code is the status code.
	Code int
	// Status is the status line after the protocol: "200 OK"; empty when
	// no answer's head was read.
	Status string
	// Body holds at most max+1 bytes of the body (Post's max).
	Body []byte
}

// New returns a client that POSTs to u with the static headers of header
// (User-Agent and Content-Type included), or nil when the request is not
// one it sends as net/http would: an https URL, a proxy for u in the
// environment, a host that is not plain ASCII or has an IPv6 zone, or a
// header that net/http writes differently or refuses (framing and
// connection headers, invalid names or values).
func New(u *url.URL, header http.Header) *Client {
	if u.Scheme != "http" {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	host := u.Host
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return nil
		}
	}
	for k, vs := range header {
		switch k {
		case "Host", "Connection", "Content-Length", "Transfer-Encoding", "Trailer", "Te",
			"Upgrade", "Keep-Alive", "Expect", "Proxy-Connection":
			return nil
		}
		if !validHeaderName(k) {
			return nil
		}
		for _, v := range vs {
			if !ValidHeaderValue(v) {
				return nil
			}
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	// As net/http: the request line, Host, User-Agent, then (Content-Length
	// and) the other headers sorted by name.
	head := make([]byte, 0, 256)
	head = append(head, "POST "...)
	head = append(head, u.RequestURI()...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, host...)
	head = append(head, "\r\n"...)
	for _, v := range header["User-Agent"] {
		head = appendHeader(head, "User-Agent", v)
	}
	keys := make([]string, 0, len(header))
	for k := range header {
		if k != "User-Agent" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range header[k] {
			head = appendHeader(head, k, v)
		}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &Client{
		addr:        net.JoinHostPort(u.Hostname(), port),
		head:        head,
		dial:        dialer.DialContext,
		maxIdle:     MaxIdle,
		idleTimeout: IdleTimeout,
	}
}

// appendHeader appends one header line.
func appendHeader(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, trimHeaderValue(value)...)
	return append(dst, "\r\n"...)
}

// Post sends one request, the client's head, Content-Length, the header
// lines of extra ("Name: value\r\n" each, valid ones) and body, and reads
// the final answer: at most max+1 bytes of its body, so that a longer
// body can be told apart. After an error, resp.Status tells whether the
// answer's head was read (not empty: the error came while reading the
// body).
func (c *Client) Post(ctx context.Context, extra, body []byte, max int64) (resp Response, err error) {
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	cn, err := c.conn(ctx)
	if err != nil {
		return resp, ctxError(ctx, err)
	}
	stop := context.AfterFunc(ctx, cn.interrupt)
	reuse := false
	defer func() {
		if stop() && reuse {
			c.put(cn)
			return
		}
		_ = cn.nc.Close()
	}()

	req := append(cn.head[:0], c.head...)
	req = append(req, "Content-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\n"...)
	req = append(req, extra...)
	req = append(req, "\r\n"...)
	if len(req)+len(body) <= maxCopiedBody {
		req = append(req, body...) // one write
		_, err = cn.nc.Write(req)
	} else if _, err = cn.nc.Write(req); err == nil {
		_, err = cn.nc.Write(body)
	}
	if cap(req) <= maxCopiedBody {
		cn.head = req[:0]
	}
	if err != nil {
		return resp, ctxError(ctx, err)
	}

	h, err := cn.readHead()
	if err != nil {
		return resp, ctxError(ctx, err)
	}
	resp = Response{Code: h.code, Status: h.status}
	length, r := int64(-1), io.Reader(cn.br)
	switch h.body {
	case noBody:
		reuse = !h.close && cn.br.Buffered() == 0
		return resp, nil
	case chunkedBody:
		cn.chunked = chunkedReader{cn: cn, src: httputil.NewChunkedReader(cn.br)}
		r = &cn.chunked
	case fixedBody:
		length = h.length
		cn.fixed = fixedReader{r: cn.br, n: h.length}
		r = &cn.fixed
	}
	resp.Body, err = ReadBody(r, length, max)
	if err != nil {
		resp.Body = nil
		return resp, ctxError(ctx, err)
	}
	eof := int64(len(resp.Body)) <= max
	if !eof && !h.close {
		// As net/http's callers do: drain a little so that the connection
		// is reused (a failure only closes it).
		n, derr := io.CopyN(io.Discard, r, MaxDrainBytes+1)
		eof = n <= MaxDrainBytes && errors.Is(derr, io.EOF)
	}
	reuse = eof && !h.close && cn.br.Buffered() == 0
	return resp, nil
}

// ReadBody reads body to its end, or its first max+1 bytes when it is
// longer; length is its Content-Length (-1: unknown). A body of at most
// max bytes was read to its end.
func ReadBody(body io.Reader, length, max int64) ([]byte, error) {
	if length == 0 {
		return nil, nil
	}
	size := 512
	if length > 0 && length <= max {
		size = int(length) + 1 // room to read the end in the same call
	}
	buf := make([]byte, 0, size)
	limit := max + 1
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		end := min(int64(cap(buf)), limit)
		n, err := body.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// aLongTimeAgo is a deadline in the past: it interrupts the I/O in
// progress on a connection.
var aLongTimeAgo = time.Unix(1, 0)

// ctxError returns the error of ctx when it ended (the I/O error then comes
// from the deadline it set, or its cancellation), else err.
func ctxError(ctx context.Context, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			<-ctx.Done() // its timer fires at d, as the connection's did
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// conn returns an idle connection that the receiver did not close, or a
// new one; its deadline is ctx's.
func (c *Client) conn(ctx context.Context) (*conn, error) {
	deadline, _ := ctx.Deadline()
	for {
		cn, err := c.takeIdle()
		if err != nil {
			return nil, err
		}
		if cn == nil {
			break
		}
		if err := cn.setDeadline(deadline); err == nil && cn.alive() {
			return cn, nil
		}
		_ = cn.nc.Close()
	}
	nc, err := c.dial(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	cn := &conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), head: make([]byte, 0, 512)}
	cn.interrupt = func() { _ = nc.SetDeadline(aLongTimeAgo) }
	cn.peek = cn.peekFD
	if sc, ok := nc.(syscall.Conn); ok {
		if cn.rc, err = sc.SyscallConn(); err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	if err := cn.setDeadline(deadline); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return cn, nil
}

// setDeadline sets the connection's deadline (the zero time: none) unless
// it is already set to d.
func (cn *conn) setDeadline(d time.Time) error {
	if d.Equal(cn.deadline) {
		return nil
	}
	if err := cn.nc.SetDeadline(d); err != nil {
		return err
	}
	cn.deadline = d
	return nil
}

// takeIdle returns the most recently used idle connection that is not
// past the idle timeout, closing those that are; nil when none. It fails
// with ErrClosed after Close.
func (c *Client) takeIdle() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	for n := len(c.idle); n > 0; n = len(c.idle) {
		cn := c.idle[n-1]
		c.idle[n-1] = nil
		c.idle = c.idle[:n-1]
		if time.Since(cn.idleSince) < c.idleTimeout {
			return cn, nil
		}
		_ = cn.nc.Close()
	}
	return nil, nil
}

// put returns a connection to the pool, or closes it when the pool is
// full or closed.
func (c *Client) put(cn *conn) {
	cn.idleSince = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle) >= c.maxIdle {
		_ = cn.nc.Close()
		return
	}
	c.idle = append(c.idle, cn)
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.idleTimeout, c.closeStale)
	}
}

// closeStale closes the connections idle for longer than the idle timeout
// (the pool's timer runs it) and waits for the next to expire.
func (c *Client) closeStale() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sweep == nil {
		return // Close stopped the timer after it fired
	}
	now := time.Now()
	kept := c.idle[:0]
	for _, cn := range c.idle {
		if now.Sub(cn.idleSince) >= c.idleTimeout {
			_ = cn.nc.Close()
			continue
		}
		kept = append(kept, cn)
	}
	clear(c.idle[len(kept):])
	c.idle = kept
	if len(c.idle) == 0 {
		c.sweep = nil
		return
	}
	c.sweep.Reset(c.idle[0].idleSince.Add(c.idleTimeout).Sub(now))
}

// Idle returns the number of idle connections.
func (c *Client) Idle() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.idle)
}

// Close closes the idle connections and stops the pool's timer; the
// connections of calls in flight are closed when their calls end, and Post
// fails with ErrClosed from now on. Close is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cn := range c.idle {
		_ = cn.nc.Close()
	}
	clear(c.idle)
	c.idle = nil
	if c.sweep != nil {
		c.sweep.Stop()
		c.sweep = nil
	}
}

// alive reports whether an idle connection can carry a request: the
// receiver neither closed it nor sent anything on it since the last
// answer. It looks without blocking (one recv with MSG_PEEK).
func (cn *conn) alive() bool {
	if cn.br.Buffered() > 0 {
		return false
	}
	if cn.rc == nil {
		return true
	}
	cn.peeked = false
	err := cn.rc.Read(cn.peek)
	return err == nil && cn.peeked
}
