package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/internal/h1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// ErrClosed is the error of Sender.Handle after Close.
var ErrClosed = errors.New("webhook: the sender is closed")

// errTimeout is the cause of a delivery's context when Config.Timeout
// passes. It is a context.DeadlineExceeded.
var errTimeout = fmt.Errorf("delivery timeout: %w", context.DeadlineExceeded)

// Sender delivers the batches of a queue to one URL: its Handle method is
// the queue's orderly.HandlerFunc. Close it once the node that calls
// Handle has stopped. Its methods are safe for concurrent use.
type Sender struct {
	url     string // the URL requests go to, secrets included
	safeURL string // the URL for errors and logs
	timeout time.Duration
	client  *http.Client // Config.Client: the caller's, never closed here
	// transport, when set, sends the requests instead of client: the
	// sender's own net/http transport follows no redirects and has no
	// cookie jar or timeout, so what http.Client adds per request (a copy
	// of the headers for redirects) is skipped, and the basic
	// authentication that it takes from the URL is in header instead.
	transport *http.Transport
	// direct, when set, sends the requests instead of transport: the
	// sender's own client to a plain http URL without a proxy, unless
	// Config.NetHTTP (see package h1).
	direct   *h1.Client
	header   http.Header
	logger   *slog.Logger
	maxBytes int64
	secret   []byte // signs requests when not nil
	standard bool   // signs with Standard Webhooks instead of Orderly-Signature
	observe  func(status int)
	macs     sync.Pool // of hash.Hash: HMAC-SHA256 under secret, reset before use
	closed   atomic.Bool
}

// New returns a sender that POSTs each batch to cfg.URL and returns the
// outcome of the answer: nil when it acknowledges every id, an
// *orderly.PartialFailure when it fails some ids, any other error when the
// whole batch failed. See the package documentation for the protocol.
//
// New does no I/O; it returns an error when cfg is invalid.
func New(cfg *Config) (*Sender, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	u, err := parseURL(c.URL)
	if err != nil {
		return nil, err
	}
	s := &Sender{
		url:      c.URL,
		safeURL:  redactURL(u),
		timeout:  c.Timeout,
		client:   cfg.Client,
		header:   staticHeader(c.Header),
		logger:   c.Logger,
		maxBytes: c.MaxResponseBytes,
		secret:   c.Secret,
		standard: c.Scheme == wire.SchemeStandard,
		observe:  c.Observe,
	}
	if s.standard {
		for _, k := range standardHeaders {
			delete(s.header, k)
		}
	}
	if s.client == nil {
		s.transport = newTransport()
		if u.User != nil && s.header.Get("Authorization") == "" {
			// As http.Client does for a URL with userinfo.
			pass, _ := u.User.Password()
			s.header["Authorization"] = []string{"Basic " +
				base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))}
		}
		if !c.NetHTTP {
			direct := s.header.Clone()
			direct["User-Agent"] = userAgent
			direct["Content-Type"] = contentTypeJSON
			s.direct = h1.New(u, direct)
		}
	}
	return s, nil
}

// Handle is the orderly.HandlerFunc of the queue: one POST of b, its
// answer turned into the batch's outcome. After Close it fails with
// ErrClosed.
func (s *Sender) Handle(ctx context.Context, b *orderly.Batch) error {
	if s.closed.Load() {
		return ErrClosed
	}
	body, err := requestOf(b).MarshalJSON()
	if err != nil {
		return fmt.Errorf("webhook: encoding the request: %w", err)
	}
	// The node's context usually ends before the timeout would (its call
	// deadline): then the call needs no timer of its own.
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > s.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.timeout, errTimeout)
		defer cancel()
	}
	head, answer, err := s.post(ctx, b.Delivery, b.Delivery, body)
	if err != nil {
		return err
	}
	return s.outcome(b, head, answer)
}

// Close closes the sender's idle connections and stops its pool's timer,
// so that nothing of the sender outlives it: call it once the node that
// calls Handle has stopped (Node.Stop returned). A call still in flight
// closes its connection when it ends; Handle fails with ErrClosed from now
// on. A Config.Client is the caller's, and Close leaves it alone. Close is
// idempotent and returns nil.
func (s *Sender) Close() error {
	s.closed.Store(true)
	s.closeIdle()
	return nil
}

// closeIdle closes the idle connections of the sender's own clients.
func (s *Sender) closeIdle() {
	if s.direct != nil {
		s.direct.Close()
	}
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
}

// answerHead is the head of an answer.
type answerHead struct {
	code   int
	status string // "200 OK": the status line after the protocol
}

// post sends one request and returns the head of its answer and the start
// of its body: at most maxBytes+1 bytes, so that a longer body can be told
// apart. The body of the answer is closed. msgID is the Standard Webhooks
// message id (Webhook-Id) when the sender signs with that scheme.
func (s *Sender) post(ctx context.Context, delivery, msgID string, body []byte) (answerHead, []byte, error) {
	if s.closed.Load() {
		defer s.closeIdle() // a call that overlapped Close leaves no idle connection
	}
	if s.direct != nil {
		return s.postDirect(ctx, delivery, msgID, body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return answerHead{}, nil, fmt.Errorf("webhook: building a request to %s: %w", s.safeURL, unwrapURLError(err))
	}
	req.Header = s.requestHeader(ctx, delivery, msgID, body)

	var resp *http.Response
	if s.transport != nil {
		resp, err = s.transport.RoundTrip(req)
	} else {
		resp, err = s.client.Do(req)
	}
	s.observed(resp, err)
	if err != nil {
		return answerHead{}, nil, s.requestError(ctx, "posting to", err)
	}
	a := answerHead{code: resp.StatusCode, status: resp.Status}
	answer, err := h1.ReadBody(resp.Body, resp.ContentLength, s.maxBytes)
	closeBody(resp.Body, err == nil && int64(len(answer)) <= s.maxBytes)
	if err != nil {
		return a, nil, s.requestError(ctx, "reading the answer of", err)
	}
	return a, answer, nil
}

// postDirect is post through the direct client.
func (s *Sender) postDirect(ctx context.Context, delivery, msgID string, body []byte) (answerHead, []byte, error) {
	if !h1.ValidHeaderValue(delivery) || !h1.ValidHeaderValue(msgID) {
		return answerHead{}, nil, s.requestError(ctx, "posting to",
			fmt.Errorf("net/http: invalid header field value for %q", wire.DeliveryHeader))
	}
	var buf [256]byte
	resp, err := s.direct.Post(ctx, s.appendHeaders(buf[:0], ctx, delivery, msgID, body), body, s.maxBytes)
	if s.observe != nil {
		s.observe(resp.Code) // 0 when no answer came
	}
	a := answerHead{code: resp.Code, status: resp.Status}
	if err != nil {
		stage := "posting to"
		if resp.Status != "" {
			stage = "reading the answer of"
		}
		return a, nil, s.requestError(ctx, stage, err)
	}
	return a, resp.Body, nil
}

// Values of the headers every request carries, shared by all requests
// (their capacity is their length: a RoundTripper that adds a value
// copies them).
var (
	contentTypeJSON = []string{"application/json"}
	userAgent       = []string{wire.UserAgent}
)

// requestHeader returns the headers of a request that carries body in ctx:
// Config.Header, Content-Type, User-Agent, the delivery, the deadline
// (ctx's) and the signature when the sender has a secret (Orderly-Signature,
// or the three Standard Webhooks headers). It fills the map
// directly, with canonical keys: no canonicalisation per request, and one
// allocation for the values of the three headers that change per request.
func (s *Sender) requestHeader(ctx context.Context, delivery, msgID string, body []byte) http.Header {
	h := make(http.Header, len(s.header)+7)
	for k, vs := range s.header {
		h[k] = vs
	}
	vals := make([]string, 3)
	h["Content-Type"] = contentTypeJSON
	h["User-Agent"] = userAgent
	vals[0] = delivery
	h[wire.DeliveryHeader] = vals[0:1:1]
	if d, ok := ctx.Deadline(); ok {
		vals[1] = wire.FormatDeadline(d)
		h[wire.DeadlineHeader] = vals[1:2:2]
	}
	if len(s.secret) > 0 && s.standard {
		now := time.Now()
		h[wire.StandardIDHeader] = []string{msgID}
		h[wire.StandardTimestampHeader] = []string{strconv.FormatInt(now.Unix(), 10)}
		h[wire.StandardSignatureHeader] = []string{s.signStandard(msgID, now, body)}
	} else if len(s.secret) > 0 {
		vals[2] = s.sign(time.Now(), body)
		h[wire.SignatureHeader] = vals[2:3:3]
	}
	return h
}

// appendHeaders appends the header lines of a request that carries body in
// ctx that change per request (those requestHeader adds to the static
// ones): the deadline, the delivery and the signature.
func (s *Sender) appendHeaders(dst []byte, ctx context.Context, delivery, msgID string, body []byte) []byte {
	if d, ok := ctx.Deadline(); ok {
		dst = append(dst, wire.DeadlineHeader+": "...)
		dst = d.UTC().AppendFormat(dst, wire.DeadlineFormat)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, wire.DeliveryHeader+": "...)
	dst = append(dst, delivery...)
	dst = append(dst, "\r\n"...)
	if len(s.secret) > 0 && s.standard {
		now := time.Now()
		dst = append(dst, wire.StandardIDHeader+": "...)
		dst = append(dst, msgID...)
		dst = append(dst, "\r\n"+wire.StandardTimestampHeader+": "...)
		dst = strconv.AppendInt(dst, now.Unix(), 10)
		dst = append(dst, "\r\n"+wire.StandardSignatureHeader+": "...)
		dst = append(dst, s.signStandard(msgID, now, body)...)
		dst = append(dst, "\r\n"...)
	} else if len(s.secret) > 0 {
		dst = append(dst, wire.SignatureHeader+": "...)
		dst = append(dst, s.sign(time.Now(), body)...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// sign returns the Orderly-Signature header of a request with body sent
// at t: wire.Sign(s.secret, t, body), with a pooled HMAC.
func (s *Sender) sign(t time.Time, body []byte) string {
	h, _ := s.macs.Get().(hash.Hash)
	if h == nil {
		h = hmac.New(sha256.New, s.secret)
	}
	var ts [20]byte
	tsb := strconv.AppendInt(ts[:0], t.Unix(), 10)
	h.Reset()
	h.Write(tsb)
	h.Write([]byte{'.'})
	h.Write(body)
	var sum [sha256.Size]byte
	mac := h.Sum(sum[:0])
	s.macs.Put(h)
	out := make([]byte, 0, len("t=,v1=")+len(tsb)+hex.EncodedLen(len(mac)))
	out = append(out, "t="...)
	out = append(out, tsb...)
	out = append(out, ",v1="...)
	out = hex.AppendEncode(out, mac)
	return string(out)
}

// signStandard returns the Webhook-Signature header of a request with
// message id and body sent at t: wire.SignStandard(s.secret, id, t, body),
// with a pooled HMAC.
func (s *Sender) signStandard(id string, t time.Time, body []byte) string {
	h, _ := s.macs.Get().(hash.Hash)
	if h == nil {
		h = hmac.New(sha256.New, s.secret)
	}
	var ts [20]byte
	h.Reset()
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(ts[:0], t.Unix(), 10))
	h.Write([]byte{'.'})
	h.Write(body)
	var sum [sha256.Size]byte
	mac := h.Sum(sum[:0])
	s.macs.Put(h)
	out := make([]byte, 0, len("v1,")+base64.StdEncoding.EncodedLen(len(mac)))
	out = append(out, "v1,"...)
	out = base64.StdEncoding.AppendEncode(out, mac)
	return string(out)
}

// standardHeaders are the Standard Webhooks headers, which a sender of that
// scheme sets itself: Config.Header's are dropped.
var standardHeaders = []string{wire.StandardIDHeader, wire.StandardTimestampHeader, wire.StandardSignatureHeader}

// staticHeader returns the copy of Config.Header that requests carry: keys
// canonical, without the headers the sender sets itself (Content-Type,
// User-Agent, Orderly-Delivery, Orderly-Deadline, and Orderly-Signature,
// which only Secret may set), each value slice clipped to its length so
// that requests can share it.
func staticHeader(h http.Header) http.Header {
	out := copyHeader(h)
	for _, k := range []string{"Content-Type", "User-Agent", wire.DeliveryHeader, wire.DeadlineHeader, wire.SignatureHeader} {
		delete(out, k)
	}
	for k, vs := range out {
		out[k] = slices.Clip(vs)
	}
	return out
}

// requestError is the error of a request that got no (complete) answer:
// the delivery's timeout passed, ctx ended, or the connection failed.
func (s *Sender) requestError(ctx context.Context, doing string, err error) error {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return fmt.Errorf("webhook: %s %s: no answer within %s: %w", doing, s.safeURL, s.timeout, errTimeout)
	}
	return fmt.Errorf("webhook: %s %s: %w", doing, s.safeURL, unwrapURLError(err))
}

// unwrapURLError returns the cause of a *url.Error, whose message quotes the
// URL with its query string.
func unwrapURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// closeBody drains a little of what is left of body unless its end was
// read (eof), so that its connection can be reused, and closes it.
func closeBody(body io.ReadCloser, eof bool) {
	if !eof {
		_, _ = io.CopyN(io.Discard, body, h1.MaxDrainBytes)
	}
	_ = body.Close()
}

// deadBackoff bounds the waits between the attempts of ReportDead.
const (
	deadFirstWait = 100 * time.Millisecond
	deadMaxWait   = 30 * time.Second
)

// ReportDead POSTs a queue's dead jobs (what a settle moved to the
// morgue) to the sender's URL, in the body of a delivery (wire.Request:
// the queue, the shard, the jobs with the payloads that died and their
// error), signed like a delivery, its Orderly-Delivery
// "<queue>/<shard>/retries_exhausted". It tries again with backoff (100 ms
// doubling to 30 s) until an answer with a 2xx status comes, whatever its
// body, or ctx ends; then it returns ctx's error. The node's
// retries-exhausted hook calls it (docs/webhooks.md): at least once per
// dead job.
func (s *Sender) ReportDead(ctx context.Context, queue string, shard int, dead []orderly.Job) error {
	b := &orderly.Batch{Queue: queue, Shard: shard, Jobs: dead}
	body, err := requestOf(b).MarshalJSON()
	if err != nil {
		return fmt.Errorf("webhook: encoding the dead jobs: %w", err)
	}
	delivery := queue + "/" + strconv.Itoa(shard) + "/retries_exhausted"
	// The report's Standard Webhooks id: the same for its attempts, another
	// for another report (a receiver may deduplicate by it).
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	msgID := delivery + "/" + hex.EncodeToString(nonce[:])
	wait := deadFirstWait
	for attempt := 1; ; attempt++ {
		if s.closed.Load() {
			return ErrClosed
		}
		actx, cancel := context.WithTimeoutCause(ctx, s.timeout, errTimeout)
		head, answer, err := s.post(actx, delivery, msgID, body)
		cancel()
		if err == nil && head.code >= 200 && head.code <= 299 {
			return nil
		}
		if err == nil {
			err = s.answerError(head, answer, nil)
		}
		if attempt == 1 || attempt%10 == 0 {
			s.logger.Warn("webhook: the retries-exhausted URL did not take the dead jobs; trying again",
				"queue", queue, "shard", shard, "url", s.safeURL, "ids", len(dead), "attempt", attempt, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("webhook: reporting dead jobs to %s: %w", s.safeURL, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, deadMaxWait)
	}
}
