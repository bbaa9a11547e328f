package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// This file reads an answer's head as net/http's Transport does (its
// ReadResponse, net/textproto's ReadMIMEHeader and its transfer rules),
// keeping only what the client needs: the status, how the body is
// delimited, whether the connection may carry another request.
// FuzzH1VsNetHTTP holds the two to the same outcome.

// errTrailerEOF is net/http's error for a chunked body whose trailer the
// connection's end cut.
var errTrailerEOF = errors.New("http: unexpected EOF reading trailer")

// bodyKind tells how an answer's body is delimited.
type bodyKind uint8

const (
	noBody    bodyKind = iota // none: 1xx, 204, 304, or Content-Length: 0
	fixedBody                 // Content-Length bytes
	chunkedBody
	toEOF // up to the end of the connection
)

// head is what the client keeps of an answer's head.
type head struct {
	code   int
	status string // "200 OK": the status line after the protocol
	body   bodyKind
	length int64 // of a fixedBody
	close  bool  // the connection carries no other request
}

// fields is what the header fields of an answer say about its body and
// connection, gathered while they are read and judged once all are.
type fields struct {
	clCount    int
	clFirst    []byte // the first Content-Length, trimmed
	clMismatch bool   // another Content-Length differs from the first
	teCount    int
	teFirst    []byte // the first Transfer-Encoding
	trailer    bool   // a Trailer field
	badTrailer bool   // one naming Transfer-Encoding, Trailer or Content-Length
	closeTok   bool   // Connection: close
	keepTok    bool   // Connection: keep-alive
	upgradeTok bool   // Connection: upgrade
	upgrade    bool   // a first Upgrade field that is not empty
	sawUpgrade bool
}

// readHead reads the head of the final answer, skipping the 1xx answers
// before it (101 is final) as long as their heads and its own fit in
// MaxHeaderBytes together, as net/http does.
func (cn *conn) readHead() (head, error) {
	budget := MaxHeaderBytes
	for {
		line, err := cn.readLine(&budget)
		if err != nil {
			return head{}, err
		}
		major, minor, code, status, err := parseStatusLine(line)
		if err != nil {
			return head{}, err
		}
		var f fields
		if err := cn.readFields(&budget, &f); err != nil {
			return head{}, err
		}
		h, err := f.head(major, minor, code)
		if err != nil {
			return head{}, err
		}
		if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
			continue // informational: the final answer follows
		}
		if code == http.StatusSwitchingProtocols && f.upgrade && f.upgradeTok {
			h.close = true // a protocol switch: the rest is the new protocol's, unread
		}
		h.status = status
		return h, nil
	}
}

// head applies net/http's transfer rules to the fields of an answer of
// HTTP/major.minor with status code.
func (f *fields) head(major, minor, code int) (head, error) {
	h := head{code: code, length: -1}
	// shouldClose
	switch {
	case major < 1:
		h.close = true
	case major == 1 && minor == 0:
		h.close = f.closeTok || !f.keepTok
	default:
		h.close = f.closeTok
	}
	if major == 0 && minor == 0 {
		major, minor = 1, 1 // net/http's default for what follows
	}
	// parseTransferEncoding: only one, only chunked, not in HTTP/1.0.
	chunked := false
	if f.teCount > 0 && (major > 1 || major == 1 && minor >= 1) {
		if f.teCount != 1 {
			return h, errors.New("too many transfer encodings")
		}
		if !asciiEqualFold(f.teFirst, "chunked") {
			return h, fmt.Errorf("unsupported transfer encoding: %q", f.teFirst)
		}
		chunked = true
	}
	// fixLength: equal copies only, a valid number, whatever the status.
	if f.clMismatch {
		return h, errors.New("http: message cannot contain multiple Content-Length headers")
	}
	if f.clCount > 0 {
		if len(f.clFirst) == 0 {
			return h, errors.New(`invalid empty Content-Length`)
		}
		n, err := strconv.ParseUint(string(f.clFirst), 10, 63)
		if err != nil {
			return h, fmt.Errorf("bad Content-Length %q", f.clFirst)
		}
		h.length = int64(n)
	}
	allowed := code < 100 || code > 199 && code != http.StatusNoContent && code != http.StatusNotModified
	switch {
	case !allowed:
		h.length = 0
	case chunked:
		h.length = -1
	}
	// fixTrailer
	if f.trailer && chunked && f.badTrailer {
		return h, errors.New("bad trailer key")
	}
	switch {
	case chunked && !allowed, h.length == 0:
		h.body = noBody
	case chunked:
		h.body = chunkedBody
	case h.length > 0:
		h.body = fixedBody
	default: // no Content-Length, a body allowed: up to the end
		h.body, h.close = toEOF, true
	}
	return h, nil
}

// readFields reads header fields up to the empty line, as textproto's
// ReadMIMEHeader does, into f (nil: only check them, for a trailer).
func (cn *conn) readFields(budget *int, f *fields) error {
	if b, err := cn.br.Peek(1); err == nil && (b[0] == ' ' || b[0] == '\t') {
		return errors.New("malformed MIME header initial line")
	}
	for {
		kv, err := cn.readContinuedLine(budget)
		if err != nil {
			return err
		}
		if len(kv) == 0 {
			return nil
		}
		k, v, ok := bytes.Cut(kv, []byte{':'})
		if !ok || !validFieldName(k) {
			return fmt.Errorf("malformed MIME header line: %q", kv)
		}
		for _, c := range v {
			if !validFieldValueByte(c) {
				return fmt.Errorf("malformed MIME header line: %q", kv)
			}
		}
		if f != nil {
			f.add(k, bytes.TrimLeft(v, " \t"))
		}
	}
}

// add records a field that matters to the transfer rules.
func (f *fields) add(name, value []byte) {
	switch {
	case asciiEqualFold(name, "Content-Length"):
		v := trimString(value)
		if f.clCount == 0 {
			f.clFirst = append(f.clFirst[:0], v...)
		} else if !bytes.Equal(v, f.clFirst) {
			f.clMismatch = true
		}
		f.clCount++
	case asciiEqualFold(name, "Transfer-Encoding"):
		if f.teCount == 0 {
			f.teFirst = append(f.teFirst[:0], value...)
		}
		f.teCount++
	case asciiEqualFold(name, "Connection"):
		eachElement(value, func(tok []byte) {
			f.closeTok = f.closeTok || asciiEqualFold(tok, "close")
			f.keepTok = f.keepTok || asciiEqualFold(tok, "keep-alive")
			f.upgradeTok = f.upgradeTok || asciiEqualFold(tok, "upgrade")
		})
	case asciiEqualFold(name, "Upgrade"):
		if !f.sawUpgrade {
			f.sawUpgrade, f.upgrade = true, len(value) > 0
		}
	case asciiEqualFold(name, "Trailer"):
		f.trailer = true
		eachElement(value, func(key []byte) {
			if validToken(key) && (asciiEqualFold(key, "Transfer-Encoding") ||
				asciiEqualFold(key, "Trailer") || asciiEqualFold(key, "Content-Length")) {
				f.badTrailer = true
			}
		})
	}
}

// eachElement calls fn with each element of a comma-separated field
// value, trimmed, skipping empty ones.
func eachElement(v []byte, fn func([]byte)) {
	for len(v) > 0 {
		var elem []byte
		elem, v, _ = bytes.Cut(v, []byte{','})
		if elem = trimString(elem); len(elem) > 0 {
			fn(elem)
		}
	}
}

// readContinuedLine reads a field line and the continuation lines that
// follow it (starting with a space or tab), joined by single spaces and
// trimmed of spaces and tabs, as textproto does. A line that is not empty
// must have a colon. The slice is valid until the next read.
func (cn *conn) readContinuedLine(budget *int) ([]byte, error) {
	line, err := cn.readLine(budget)
	if err != nil || len(line) == 0 {
		return line, err
	}
	if bytes.IndexByte(line, ':') < 0 {
		return nil, fmt.Errorf("malformed MIME header: missing colon: %q", line)
	}
	if b, err := cn.br.Peek(1); err != nil || b[0] != ' ' && b[0] != '\t' {
		return trim(line), nil
	}
	cn.fold = append(cn.fold[:0], trim(line)...)
	for cn.skipSpace() > 0 {
		cn.fold = append(cn.fold, ' ')
		next, err := cn.readLine(budget)
		if err != nil {
			break // as textproto: the next read sees it again
		}
		cn.fold = append(cn.fold, trim(next)...)
	}
	return cn.fold, nil
}

// skipSpace skips spaces and tabs, returning how many.
func (cn *conn) skipSpace() int {
	n := 0
	for {
		c, err := cn.br.ReadByte()
		if err != nil {
			return n
		}
		if c != ' ' && c != '\t' {
			_ = cn.br.UnreadByte()
			return n
		}
		n++
	}
}

// readLine returns the next line of the answer's head without its "\n"
// or "\r\n", as bufio.Reader.ReadLine does, charging budget with its
// length. A last line that the connection's end cuts is returned as it is;
// the read after it fails. The slice is valid until the next read.
func (cn *conn) readLine(budget *int) ([]byte, error) {
	line, err := cn.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= *budget {
			line, err = cn.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	*budget -= len(line)
	if *budget < 0 {
		return nil, fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", MaxHeaderBytes)
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return line, nil
		}
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

// readTrailer reads the trailer of a chunked body, as net/http does: a
// CRLF, or fields that end with an empty line within the reader's buffer.
func (cn *conn) readTrailer() error {
	b, err := cn.br.Peek(2)
	if string(b) == "\r\n" {
		_, _ = cn.br.Discard(2)
		return nil
	}
	if len(b) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !cn.seeDoubleCRLF() {
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	budget := cn.br.Size()
	if err := cn.readFields(&budget, nil); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errTrailerEOF
		}
		return err
	}
	return nil
}

// seeDoubleCRLF reports whether "\r\n\r\n" comes within the reader's
// buffer.
func (cn *conn) seeDoubleCRLF() bool {
	for n := 4; ; n++ {
		b, err := cn.br.Peek(n)
		if bytes.HasSuffix(b, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// parseStatusLine parses "HTTP/x.y NNN reason" as net/http does and
// returns x, y, NNN and "NNN reason".
func parseStatusLine(line []byte) (major, minor, code int, status string, err error) {
	proto, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return 0, 0, 0, "", fmt.Errorf("malformed HTTP response %q", line)
	}
	rest = bytes.TrimLeft(rest, " ")
	digits, _, _ := bytes.Cut(rest, []byte{' '})
	if len(digits) != 3 {
		return 0, 0, 0, "", fmt.Errorf("malformed HTTP status code %q", digits)
	}
	code, ok = atoi(digits)
	if !ok || code < 0 {
		return 0, 0, 0, "", fmt.Errorf("malformed HTTP status code %q", digits)
	}
	if major, minor, ok = parseVersion(proto); !ok {
		return 0, 0, 0, "", fmt.Errorf("malformed HTTP version %q", proto)
	}
	switch string(rest) {
	case "200 OK":
		status = "200 OK"
	case "204 No Content":
		status = "204 No Content"
	default:
		status = string(rest)
	}
	return major, minor, code, status, nil
}

// atoi is strconv.Atoi for a short decimal: an optional sign, digits.
func atoi(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg, b = b[0] == '-', b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseVersion is http.ParseHTTPVersion: "HTTP/x.y" with one digit each.
func parseVersion(v []byte) (major, minor int, ok bool) {
	switch string(v) {
	case "HTTP/1.1":
		return 1, 1, true
	case "HTTP/1.0":
		return 1, 0, true
	}
	if len(v) != len("HTTP/X.Y") || string(v[:5]) != "HTTP/" || v[6] != '.' ||
		v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// fixedReader reads a body of known length; the connection ending before
// it is io.ErrUnexpectedEOF.
type fixedReader struct {
	r io.Reader
	n int64
}

func (b *fixedReader) Read(p []byte) (int, error) {
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

// chunkedReader reads a chunked body and then its trailer, whose failure
// is the body's, as net/http's body does.
type chunkedReader struct {
	cn  *conn
	src io.Reader
	err error // once the end was read: io.EOF or the trailer's error
}

func (b *chunkedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	if err == io.EOF { //nolint:errorlint // the chunked reader returns io.EOF itself
		if terr := b.cn.readTrailer(); terr != nil {
			err = terr
		}
		b.err = err
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

// isTokenByte reports whether c may appear in a token (RFC 9110).
func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// validToken reports whether b is a token.
func validToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isTokenByte(c) {
			return false
		}
	}
	return true
}

// validFieldName reports whether textproto accepts b as a field name: not
// empty, token bytes and spaces (a name with a space is kept as it is, so
// it matches no field the client reads).
func validFieldName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isTokenByte(c) && c != ' ' {
			return false
		}
	}
	return true
}

// validFieldValueByte reports whether textproto accepts c in a field
// value: visible ASCII, space, tab, and bytes from 0x80.
func validFieldValueByte(c byte) bool {
	return c == '\t' || c >= 0x20 && c != 0x7f
}

// trim trims spaces and tabs, as textproto trims a line.
func trim(b []byte) []byte { return bytes.Trim(b, " \t") }

// trimString trims ASCII white space, as textproto.TrimString.
func trimString(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// ValidHeaderValue reports whether v can be written as a header value: no
// control characters but tab.
func ValidHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validHeaderName reports whether s is a header name (an RFC 9110 token).
func validHeaderName(s string) bool { return validToken([]byte(s)) }

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
