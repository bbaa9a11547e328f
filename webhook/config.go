package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/webhook/internal/h1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one delivery: the POST and the reading of its
	// answer.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes is the most of an answer's body that is read
	// (1 MiB).
	DefaultMaxResponseBytes int64 = 1 << 20
)

// Config configures a webhook handler. The zero value of each field but URL
// means its default.
type Config struct {
	// URL receives the POSTs. Required: an absolute http or https URL.
	// Userinfo in it is sent as basic authentication; errors and logs name
	// the URL without userinfo, query string and fragment.
	URL string
	// Timeout bounds one delivery [DefaultTimeout], in addition to the
	// handler's context. It must not be negative.
	Timeout time.Duration
	// Client sends the requests [the sender's own: the direct client for
	// an http URL that no proxy serves, else a net/http transport with dial
	// and TLS handshake timeouts, a pool of idle connections and proxies
	// from the environment; no redirects followed; see "Connections" in
	// the package documentation]. Timeout applies whatever the client,
	// through the request's context. A client that follows redirects may
	// turn the POST into a GET. Sender.Close leaves it alone.
	Client *http.Client
	// NetHTTP sends every request of the sender's own through its net/http
	// transport, never through the direct client (see "Connections" in the
	// package documentation): for a receiver or a network path that the
	// direct client does not serve as well, at about twice its CPU per
	// call. The configuration file's handler.client: net/http sets it.
	// It has no effect with Client set.
	NetHTTP bool
	// Header holds extra headers sent with every request, e.g.
	// Authorization. Content-Type, User-Agent, Orderly-Delivery and
	// Orderly-Signature are set by the handler and cannot be overridden (an
	// Orderly-Signature here is dropped unless Secret signs the request,
	// and Webhook-Id, Webhook-Timestamp and Webhook-Signature are dropped
	// with Scheme wire.SchemeStandard);
	// CheckHeaderName tells which names the configuration file refuses. The
	// handler keeps a copy.
	Header http.Header
	// Secret, when not empty, signs every request: the Orderly-Signature
	// header (wire.SignatureHeader) carries the time and an HMAC-SHA256 of
	// the time and body under Secret, which a receiver checks with
	// wire.Verify or wire.VerifyRequest. The handler keeps a copy.
	Secret []byte
	// Scheme is how Secret signs: wire.SchemeOrderly (the Orderly-Signature
	// header; the default) or wire.SchemeStandard (Standard Webhooks: the
	// Webhook-Id, Webhook-Timestamp and Webhook-Signature headers, with
	// Secret the HMAC key, the bytes that a "whsec_" secret's base64
	// encodes: wire.StandardKey). The Webhook-Id of a delivery is its
	// Orderly-Delivery; a retries-exhausted report has one of its own. The
	// configuration file's handler.signature sets it.
	Scheme string
	// Observe, when set, is called after each request with the answer's
	// HTTP status, 0 when no answer came (a timeout, a connection error):
	// for metrics. It must not block.
	Observe func(status int)
	// Logger receives the handler's logs [slog.Default()].
	Logger *slog.Logger
	// MaxResponseBytes is the most of an answer's body that is read
	// [DefaultMaxResponseBytes]. A 2xx answer with a larger body fails the
	// whole batch. It must not be negative.
	MaxResponseBytes int64
}

// validate checks the fields that have no default and rejects negative
// values, naming the bad field.
func (c *Config) validate() error {
	if c == nil || c.URL == "" {
		return errors.New("webhook: url is required")
	}
	if _, err := parseURL(c.URL); err != nil {
		return err
	}
	if c.Timeout < 0 {
		return fmt.Errorf("webhook: timeout must not be negative, got %s", c.Timeout)
	}
	switch c.Scheme {
	case "", wire.SchemeOrderly, wire.SchemeStandard:
	default:
		return fmt.Errorf("webhook: scheme %q is not one of %s (the default), %s", c.Scheme, wire.SchemeOrderly, wire.SchemeStandard)
	}
	if c.MaxResponseBytes < 0 {
		return fmt.Errorf("webhook: max_response_bytes must not be negative, got %d", c.MaxResponseBytes)
	}
	return nil
}

// withDefaults returns a copy of c with defaults in place of zero values.
// The copy has its own Header.
func (c *Config) withDefaults() Config {
	out := *c
	if out.Timeout == 0 {
		out.Timeout = DefaultTimeout
	}
	out.Header = copyHeader(c.Header)
	out.Secret = bytes.Clone(c.Secret)
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.MaxResponseBytes == 0 {
		out.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return out
}

// parseURL parses an absolute http or https URL. Its errors do not quote the
// URL, which may hold secrets.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error quotes the whole URL
		}
		return nil, fmt.Errorf("webhook: url is invalid: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("webhook: url must be an http or https URL")
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, errors.New("webhook: url must be absolute, with a host")
	}
	return u, nil
}

// redactURL returns u without userinfo, query string and fragment, fit for
// errors and logs.
func redactURL(u *url.URL) string {
	safe := *u
	safe.User = nil
	safe.RawQuery = ""
	safe.ForceQuery = false
	safe.Fragment = ""
	safe.RawFragment = ""
	return safe.String()
}

// copyHeader returns a copy of h with canonical keys.
func copyHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		for _, v := range vs {
			out.Add(k, v)
		}
	}
	return out
}

// newTransport returns the net/http transport of a sender without
// Config.Client. It gives what the direct client gives (package h1's
// limits) and what net/http adds: TLS, HTTP/2 when an https receiver
// offers it, proxies from the environment. Answers are small: asking for
// gzip would add a header to every request and a decompressor to every
// compressed answer. Redirects are not followed: RoundTrip does not follow
// them, and a redirected POST may turn into a GET, whose 2xx answer would
// acknowledge a batch nobody processed.
func newTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    h1.MaxIdle,
		IdleConnTimeout:        h1.IdleTimeout,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: h1.MaxHeaderBytes,
	}
}

// ownedHeaders are the request headers the handler sets itself or that
// HTTP owns; Config.Header must not name them (CheckHeaderName).
var ownedHeaders = []string{
	"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding",
	"Host", "Connection", "Keep-Alive", "Upgrade", "Te", "Trailer",
	"Proxy-Connection", "Expect", "User-Agent",
}

// CheckHeaderName returns an error when name cannot be a static request
// header of a webhook: a header the handler owns (Orderly-*, Content-Type,
// User-Agent), one HTTP owns (Host, Content-Length, Connection,
// Transfer-Encoding...), or a name that is not a valid HTTP token. The
// configuration file's handler.headers is checked with it.
func CheckHeaderName(name string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenRune(r) }) >= 0 {
		return fmt.Errorf("%q is not a valid header name", name)
	}
	canon := http.CanonicalHeaderKey(name)
	if strings.HasPrefix(canon, "Orderly-") {
		return fmt.Errorf("%s is set by Orderly (Orderly-* headers are reserved)", canon)
	}
	if slices.Contains(ownedHeaders, canon) {
		return fmt.Errorf("%s is set by the handler or by HTTP and cannot be configured", canon)
	}
	return nil
}

// isTokenRune reports whether r may appear in an HTTP header name (a token,
// RFC 9110).
func isTokenRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
