package webhook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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

// h1Client sends the requests of a sender that uses the handler's own
// client to a plain http:// URL that no proxy serves: HTTP/1.1 on the
// caller's goroutine, over a pool of kept-alive connections. It does what
// the default http.Transport does for such a request, without the two
// goroutines per connection (readLoop, writeLoop) that each request hands
// off to and back, and without building an http.Request, an http.Response
// and their header maps:
//
//   - a connection is dialed with the same dialer (10 s timeout, TCP
//     keep-alive 30 s) when no idle one is left; at most maxIdle stay idle,
//     each for at most idleTimeout, and one the receiver closed while it was
//     idle is found before the request is written and replaced;
//   - the request is written in one call (head and body), with the headers
//     net/http writes for it (Host, User-Agent, Content-Length, then the
//     others sorted by name);
//   - the answer's status line and headers are bounded by
//     maxResponseHeaderBytes; 1xx answers before the final one are skipped;
//     the body is delimited by Content-Length, chunked encoding or the end of
//     the connection, and the connection is reused when the answer allows it
//     and its body was read to the end;
//   - ctx bounds everything: its deadline is the connection's, and its
//     cancellation interrupts the dial, the write or the read at once.
type h1Client struct {
	addr   string // host:port dialed
	head   []byte // request line, Host, User-Agent and the static headers
	dialer *net.Dialer

	maxIdle     int
	idleTimeout time.Duration

	mu    sync.Mutex
	idle  []*h1Conn   // most recently used last
	sweep *time.Timer // closes idle connections past idleTimeout; nil when none is idle
}

// h1Conn is one connection of an h1Client.
type h1Conn struct {
	nc        net.Conn
	br        *bufio.Reader
	rc        syscall.RawConn // nc's, to look at it while idle; nil if none
	idleSince time.Time
	deadline  time.Time // nc's
	interrupt func()    // sets nc's deadline in the past
	peek      func(fd uintptr) bool
	peeked    bool   // what peek found: nothing to read yet
	head      []byte // scratch for a request's head and small body
	body      h1Body
}

// Limits of the handler's own client (see defaultClient).
const (
	maxResponseHeaderBytes = 64 << 10
	maxIdleConnsPerHost    = 32
	idleConnTimeout        = 90 * time.Second
	maxInformational       = 5
	// maxCopiedBody is the largest request whose head and body are
	// written together, copied into one buffer of the connection's.
	maxCopiedBody = 64 << 10
)

// newH1Client returns the client for u and the static headers of a
// sender, or nil when the request is not one it sends as net/http would:
// an https URL, a proxy for u in the environment, a host that is not
// plain ASCII or has an IPv6 zone, or a static header that net/http
// writes differently or refuses (framing and connection headers, invalid
// names or values).
func newH1Client(u *url.URL, header http.Header) *h1Client {
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
			if !validHeaderValue(v) {
				return nil
			}
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	head := make([]byte, 0, 256)
	head = append(head, "POST "...)
	head = append(head, u.RequestURI()...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, host...)
	head = append(head, "\r\nUser-Agent: "+UserAgent+"\r\n"...)
	keys := make([]string, 0, len(header)+1)
	for k := range header {
		keys = append(keys, k)
	}
	keys = append(keys, "Content-Type")
	slices.Sort(keys)
	for _, k := range keys {
		vs := header[k]
		if k == "Content-Type" {
			vs = contentTypeJSON
		}
		for _, v := range vs {
			head = append(head, k...)
			head = append(head, ": "...)
			head = append(head, trimHeaderValue(v)...)
			head = append(head, "\r\n"...)
		}
	}
	return &h1Client{
		addr:        net.JoinHostPort(u.Hostname(), port),
		head:        head,
		dialer:      &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     maxIdleConnsPerHost,
		idleTimeout: idleConnTimeout,
	}
}

// answerHead is the head of an answer.
type answerHead struct {
	code   int
	status string // "200 OK": the status line after the protocol
}

// post sends one request (the head of the client, the per-request headers
// of s, then body) and reads its answer: at most max+1 bytes of its body.
// stage tells where an error happened: before the answer's head was read
// ("posting to") or while its body was ("reading the answer of").
func (c *h1Client) post(ctx context.Context, s *sender, delivery string, body []byte) (a answerHead, answer []byte, stage string, err error) {
	stage = "posting to"
	if err := ctx.Err(); err != nil {
		return a, nil, stage, err
	}
	if !validHeaderValue(delivery) {
		return a, nil, stage, fmt.Errorf("net/http: invalid header field value for %q", DeliveryHeader)
	}
	conn, err := c.conn(ctx)
	if err != nil {
		return a, nil, stage, ctxError(ctx, err)
	}
	stop := context.AfterFunc(ctx, conn.interrupt)
	reuse := false
	defer func() {
		if stop() && reuse {
			c.put(conn)
			return
		}
		_ = conn.nc.Close()
	}()

	h := append(conn.head[:0], c.head...)
	h = append(h, "Content-Length: "...)
	h = strconv.AppendInt(h, int64(len(body)), 10)
	h = append(h, "\r\n"...)
	h = s.appendHeaders(h, ctx, delivery, body)
	h = append(h, "\r\n"...)
	if len(h)+len(body) <= maxCopiedBody {
		h = append(h, body...) // one write
		_, err = conn.nc.Write(h)
	} else if _, err = conn.nc.Write(h); err == nil {
		_, err = conn.nc.Write(body)
	}
	if cap(h) <= maxCopiedBody {
		conn.head = h[:0]
	}
	if err != nil {
		return a, nil, stage, ctxError(ctx, err)
	}

	length, chunked, keep, err := conn.readHead(&a)
	if err != nil {
		return a, nil, stage, ctxError(ctx, err)
	}
	stage = "reading the answer of"
	var r io.Reader
	switch {
	case length == 0:
		reuse = keep && conn.br.Buffered() == 0
		return a, nil, stage, nil
	case chunked:
		r = httputil.NewChunkedReader(conn.br)
	case length > 0:
		conn.body = h1Body{r: conn.br, n: length}
		r = &conn.body
	default: // to the end of the connection
		r, keep = conn.br, false
	}
	answer, eof, err := readAnswer(r, length, s.maxBytes)
	if err != nil {
		return a, nil, stage, ctxError(ctx, err)
	}
	if !eof && keep {
		// As closeBody: drain a little so that the connection is reused
		// (a failure only closes it).
		n, derr := io.CopyN(io.Discard, r, maxDrainBytes+1)
		eof = n <= maxDrainBytes && errors.Is(derr, io.EOF)
	}
	if eof && chunked && conn.readTrailer() != nil {
		eof = false // the body is read; the connection is closed
	}
	reuse = eof && keep && conn.br.Buffered() == 0
	return a, answer, stage, nil
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
func (c *h1Client) conn(ctx context.Context) (*h1Conn, error) {
	deadline, _ := ctx.Deadline()
	for {
		conn := c.takeIdle()
		if conn == nil {
			break
		}
		if err := conn.setDeadline(deadline); err == nil && conn.alive() {
			return conn, nil
		}
		_ = conn.nc.Close()
	}
	nc, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	conn := &h1Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), head: make([]byte, 0, 512)}
	conn.interrupt = func() { _ = nc.SetDeadline(aLongTimeAgo) }
	conn.peek = conn.peekFD
	if sc, ok := nc.(syscall.Conn); ok {
		if conn.rc, err = sc.SyscallConn(); err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	if err := conn.setDeadline(deadline); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return conn, nil
}

// setDeadline sets the connection's deadline (the zero time: none) unless
// it is already set to d.
func (conn *h1Conn) setDeadline(d time.Time) error {
	if d.Equal(conn.deadline) {
		return nil
	}
	if err := conn.nc.SetDeadline(d); err != nil {
		return err
	}
	conn.deadline = d
	return nil
}

// takeIdle returns the most recently used idle connection that is not
// past the idle timeout, closing those that are; nil when none.
func (c *h1Client) takeIdle() *h1Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := len(c.idle); n > 0; n = len(c.idle) {
		conn := c.idle[n-1]
		c.idle[n-1] = nil
		c.idle = c.idle[:n-1]
		if time.Since(conn.idleSince) < c.idleTimeout {
			return conn
		}
		_ = conn.nc.Close()
	}
	return nil
}

// put returns a connection to the pool, or closes it when the pool is
// full.
func (c *h1Client) put(conn *h1Conn) {
	conn.idleSince = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.idle) >= c.maxIdle {
		_ = conn.nc.Close()
		return
	}
	c.idle = append(c.idle, conn)
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.idleTimeout, c.closeStale)
	}
}

// closeStale closes the connections idle for longer than the idle timeout
// (the pool's timer runs it) and waits for the next to expire.
func (c *h1Client) closeStale() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	kept := c.idle[:0]
	for _, conn := range c.idle {
		if now.Sub(conn.idleSince) >= c.idleTimeout {
			_ = conn.nc.Close()
			continue
		}
		kept = append(kept, conn)
	}
	clear(c.idle[len(kept):])
	c.idle = kept
	if len(c.idle) == 0 {
		c.sweep = nil
		return
	}
	c.sweep.Reset(c.idle[0].idleSince.Add(c.idleTimeout).Sub(now))
}

// closeIdle closes the idle connections and stops the pool's timer; the
// connections of requests in flight are closed when they end. The client
// stays usable.
func (c *h1Client) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.idle {
		_ = conn.nc.Close()
	}
	clear(c.idle)
	c.idle = c.idle[:0]
	if c.sweep != nil {
		c.sweep.Stop()
		c.sweep = nil
	}
}

// alive reports whether an idle connection can carry a request: the
// receiver neither closed it nor sent anything on it since the last
// answer. It looks without blocking (one recv with MSG_PEEK).
func (conn *h1Conn) alive() bool {
	if conn.br.Buffered() > 0 {
		return false
	}
	if conn.rc == nil {
		return true
	}
	conn.peeked = false
	err := conn.rc.Read(conn.peek)
	return err == nil && conn.peeked
}

// readHead reads the head of the final answer into a: its status, and
// what delimits its body (length: -1 when the end of the connection
// does, 0 when there is no body; chunked) and whether the connection may
// carry another request (keep).
func (conn *h1Conn) readHead(a *answerHead) (length int64, chunked, keep bool, err error) {
	budget := maxResponseHeaderBytes
	for range maxInformational + 1 {
		line, err := conn.readLine(&budget)
		if err != nil {
			return 0, false, false, err
		}
		minor, code, status, err := parseStatusLine(line)
		if err != nil {
			return 0, false, false, err
		}
		length, chunked, keep = -1, false, minor >= 1
		var badLength error // a bad Content-Length does not matter in a chunked answer
		for {
			line, err := conn.readLine(&budget)
			if err != nil {
				return 0, false, false, err
			}
			if len(line) == 0 {
				break
			}
			name, value, ok := bytes.Cut(line, []byte{':'})
			if !ok || len(name) == 0 || !validHeaderName(string(name)) {
				return 0, false, false, fmt.Errorf("malformed HTTP response header %q", line)
			}
			value = bytes.Trim(value, " \t")
			switch {
			case asciiEqualFold(name, "Content-Length"):
				n, perr := strconv.ParseInt(string(value), 10, 64)
				switch {
				case length >= 0 && n != length:
					return 0, false, false, fmt.Errorf("bad Content-Length %q", value)
				case perr != nil || n < 0:
					badLength = fmt.Errorf("bad Content-Length %q", value)
				default:
					length = n
				}
			case asciiEqualFold(name, "Transfer-Encoding") && minor >= 1: // as net/http, ignored in HTTP/1.0
				if !asciiEqualFold(value, "chunked") || chunked {
					return 0, false, false, fmt.Errorf("unsupported transfer encoding: %q", value)
				}
				chunked = true
			case asciiEqualFold(name, "Connection"):
				for _, tok := range bytes.Split(value, []byte{','}) {
					tok = bytes.Trim(tok, " \t")
					switch {
					case asciiEqualFold(tok, "close"):
						keep = false
					case asciiEqualFold(tok, "keep-alive") && minor == 0:
						keep = true
					}
				}
			}
		}
		if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
			continue // informational: the final answer follows
		}
		a.code, a.status = code, status
		switch {
		case chunked:
			length = -1 // Transfer-Encoding wins over Content-Length
		case badLength != nil:
			return 0, false, false, badLength
		}
		switch {
		case code < 200 || code == http.StatusNoContent || code == http.StatusNotModified:
			return 0, false, keep && code != http.StatusSwitchingProtocols, nil
		case chunked:
			return -1, true, keep, nil
		case length < 0:
			return -1, false, false, nil
		}
		return length, false, keep, nil
	}
	return 0, false, false, errors.New("too many 1xx informational responses")
}

// readLine returns the next line of the answer's head without its CRLF,
// charging budget with its length. The slice is valid until the next read.
func (conn *h1Conn) readLine(budget *int) ([]byte, error) {
	line, err := conn.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= *budget {
			line, err = conn.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	*budget -= len(line)
	if *budget < 0 {
		return nil, fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readTrailer reads the trailer of a chunked body, up to its empty line.
func (conn *h1Conn) readTrailer() error {
	budget := maxResponseHeaderBytes
	for {
		line, err := conn.readLine(&budget)
		if err != nil || len(line) == 0 {
			return err
		}
	}
}

// parseStatusLine parses "HTTP/1.x NNN reason" and returns x, NNN and
// "NNN reason".
func parseStatusLine(line []byte) (minor, code int, status string, err error) {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' ||
		(line[7] != '0' && line[7] != '1') || (len(line) > 12 && line[12] != ' ') {
		return 0, 0, "", fmt.Errorf("malformed HTTP response %q", line)
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, 0, "", fmt.Errorf("malformed HTTP status code %q", line[9:12])
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return 0, 0, "", fmt.Errorf("malformed HTTP status code %q", line[9:12])
	}
	rest := line[9:]
	switch string(rest) {
	case "200 OK":
		status = "200 OK"
	case "204 No Content":
		status = "204 No Content"
	default:
		status = string(rest)
	}
	return int(line[7] - '0'), code, status, nil
}

// h1Body reads a body of known length; the connection ending before it is
// io.ErrUnexpectedEOF.
type h1Body struct {
	r io.Reader
	n int64
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if b.n > 0 && errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if b.n <= 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

// asciiEqualFold reports whether b equals s, ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// validHeaderName reports whether s is a header name (an RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v can be written as a header value: no
// control characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// trimHeaderValue trims the spaces and tabs around v, as net/http does when
// it writes a header.
func trimHeaderValue(v string) string {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}
