package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"
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

// Headers of a request.
const (
	// DeliveryHeader names the delivery attempt:
	// "<queue>/<shard>/<epoch>/<seq>" (orderly.Batch.Delivery).
	DeliveryHeader = "Orderly-Delivery"
	// UserAgent is the User-Agent of every request.
	UserAgent = "orderly-webhook"
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
	// Client sends the requests [a client of the handler's own: dial and
	// TLS handshake timeouts, a pool of idle connections, proxies from the
	// environment, no redirects followed; requests to an http URL that no
	// proxy serves are sent on the calling goroutine, see "Connections" in
	// the package documentation]. Timeout applies whatever the
	// client, through the request's context. A client that follows
	// redirects may turn the POST into a GET.
	Client *http.Client
	// Header holds extra headers sent with every request, e.g.
	// Authorization. Content-Type, User-Agent, Orderly-Delivery and
	// Orderly-Signature are set by the handler and cannot be overridden (an
	// Orderly-Signature here is dropped unless Secret signs the request);
	// CheckHeaderName tells which names the configuration file refuses. The
	// handler keeps a copy.
	Header http.Header
	// Secret, when not empty, signs every request: the Orderly-Signature
	// header (SignatureHeader) carries the time and an HMAC-SHA256 of the
	// time and body under Secret, which a receiver checks with Verify or
	// VerifyRequest. The handler keeps a copy.
	Secret []byte
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
	if out.Client == nil {
		out.Client = defaultClient()
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

// defaultClient returns the client used when Config.Client is nil. It does
// not follow redirects: a redirected POST may turn into a GET, and a 2xx
// answer to that would acknowledge a batch nobody processed.
func defaultClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			DialContext:       dialer.DialContext,
			ForceAttemptHTTP2: true,
			// Answers are small: asking for gzip would add a header to
			// every request and a decompressor to every compressed answer.
			DisableCompression:     true,
			MaxIdleConns:           100,
			MaxIdleConnsPerHost:    32,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
