package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/orderlyhq/orderly"
)

// errTimeout is the cause of a delivery's context when Config.Timeout
// passes. It is a context.DeadlineExceeded.
var errTimeout = fmt.Errorf("delivery timeout: %w", context.DeadlineExceeded)

// maxDrainBytes is the most of an unread body discarded so that its
// connection can be reused; a longer body closes the connection instead.
const maxDrainBytes = 64 << 10

// sender delivers batches to one URL.
type sender struct {
	url     string // the URL requests go to, secrets included
	safeURL string // the URL for errors and logs
	timeout time.Duration
	client  *http.Client
	// transport, when set, sends the requests instead of client: the
	// handler's own client follows no redirects and has no cookie jar or
	// timeout, so what http.Client adds per request (a copy of the headers
	// for redirects) is skipped, and the basic authentication that it takes
	// from the URL is in header instead.
	transport http.RoundTripper
	// h1, when set, sends the requests instead of transport: the
	// handler's own client to a plain http URL without a proxy (see
	// h1Client).
	h1       *h1Client
	header   http.Header
	logger   *slog.Logger
	maxBytes int64
	secret   []byte // signs requests when not nil
	observe  func(status int)
	macs     sync.Pool // of hash.Hash: HMAC-SHA256 under secret, reset before use
}

// New returns a handler that POSTs each batch to cfg.URL and returns the
// outcome of the answer: nil when it acknowledges every id, an
// *orderly.PartialFailure when it fails some ids, any other error when the
// whole batch failed. See the package documentation for the protocol.
//
// New does no I/O; it returns an error when cfg is invalid.
func New(cfg *Config) (orderly.HandlerFunc, error) {
	s, err := newSender(cfg)
	if err != nil {
		return nil, err
	}
	return s.deliver, nil
}

// newSender validates cfg and returns a sender with its defaults.
func newSender(cfg *Config) (*sender, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	u, err := parseURL(c.URL)
	if err != nil {
		return nil, err
	}
	s := &sender{
		url:      c.URL,
		safeURL:  redactURL(u),
		timeout:  c.Timeout,
		client:   c.Client,
		header:   staticHeader(c.Header),
		logger:   c.Logger,
		maxBytes: c.MaxResponseBytes,
		secret:   c.Secret,
		observe:  c.Observe,
	}
	if cfg.Client == nil {
		s.transport = c.Client.Transport
		if u.User != nil && s.header.Get("Authorization") == "" {
			// As http.Client does for a URL with userinfo.
			pass, _ := u.User.Password()
			s.header["Authorization"] = []string{"Basic " +
				base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))}
		}
		s.h1 = newH1Client(u, s.header)
	}
	return s, nil
}

// deliver is the orderly.HandlerFunc: one POST of b, its answer turned into
// the batch's outcome.
func (s *sender) deliver(ctx context.Context, b *orderly.Batch) error {
	body, err := appendBatch(make([]byte, 0, batchSize(b)), b)
	if err != nil {
		return err
	}
	// The node's context usually ends before the timeout would (its call
	// deadline): then the call needs no timer of its own.
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > s.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.timeout, errTimeout)
		defer cancel()
	}
	head, answer, err := s.post(ctx, b.Delivery, body)
	if err != nil {
		return err
	}
	return s.outcome(b, head, answer)
}

// post sends one request and returns the head of its answer and the start
// of its body: at most maxBytes+1 bytes, so that a longer body can be told
// apart. The body of the answer is closed.
func (s *sender) post(ctx context.Context, delivery string, body []byte) (answerHead, []byte, error) {
	if s.h1 != nil {
		a, answer, stage, err := s.h1.post(ctx, s, delivery, body)
		if s.observe != nil {
			s.observe(a.code) // 0 when no answer came
		}
		if err != nil {
			return a, nil, s.requestError(ctx, stage, err)
		}
		return a, answer, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return answerHead{}, nil, fmt.Errorf("webhook: building a request to %s: %w", s.safeURL, unwrapURLError(err))
	}
	req.Header = s.requestHeader(ctx, delivery, body)

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
	answer, eof, err := readAnswer(resp.Body, resp.ContentLength, s.maxBytes)
	closeBody(resp.Body, eof)
	if err != nil {
		return a, nil, s.requestError(ctx, "reading the answer of", err)
	}
	return a, answer, nil
}

// Values of the headers every request carries, shared by all requests
// (their capacity is their length: a RoundTripper that adds a value
// copies them).
var (
	contentTypeJSON = []string{"application/json"}
	userAgent       = []string{UserAgent}
)

// requestHeader returns the headers of a request that carries body in ctx:
// Config.Header, Content-Type, User-Agent, the delivery, the deadline
// (ctx's) and the signature when the sender has a secret. It fills the map
// directly, with canonical keys: no canonicalisation per request, and one
// allocation for the values of the three headers that change per request.
func (s *sender) requestHeader(ctx context.Context, delivery string, body []byte) http.Header {
	h := make(http.Header, len(s.header)+5)
	for k, vs := range s.header {
		h[k] = vs
	}
	vals := make([]string, 3)
	h["Content-Type"] = contentTypeJSON
	h["User-Agent"] = userAgent
	vals[0] = delivery
	h[DeliveryHeader] = vals[0:1:1]
	if d, ok := ctx.Deadline(); ok {
		vals[1] = FormatDeadline(d)
		h[DeadlineHeader] = vals[1:2:2]
	}
	if len(s.secret) > 0 {
		vals[2] = s.sign(time.Now(), body)
		h[SignatureHeader] = vals[2:3:3]
	}
	return h
}

// appendHeaders appends the header lines of a request that carries body in
// ctx that change per request (those requestHeader adds to the static
// ones): the delivery, the deadline and the signature.
func (s *sender) appendHeaders(dst []byte, ctx context.Context, delivery string, body []byte) []byte {
	if d, ok := ctx.Deadline(); ok {
		dst = append(dst, DeadlineHeader+": "...)
		dst = d.UTC().AppendFormat(dst, DeadlineFormat)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, DeliveryHeader+": "...)
	dst = append(dst, delivery...)
	dst = append(dst, "\r\n"...)
	if len(s.secret) > 0 {
		dst = append(dst, SignatureHeader+": "...)
		dst = append(dst, s.sign(time.Now(), body)...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// staticHeader returns the copy of Config.Header that requests carry: keys
// canonical, without the headers the sender sets itself (Content-Type,
// User-Agent, Orderly-Delivery, Orderly-Deadline, and Orderly-Signature,
// which only Secret may set), each value slice clipped to its length so
// that requests can share it.
func staticHeader(h http.Header) http.Header {
	out := copyHeader(h)
	for _, k := range []string{"Content-Type", "User-Agent", DeliveryHeader, DeadlineHeader, SignatureHeader} {
		delete(out, k)
	}
	for k, vs := range out {
		out[k] = slices.Clip(vs)
	}
	return out
}

// readAnswer reads body to its end, or its first max+1 bytes when it is
// longer; length is its Content-Length (-1: unknown). eof reports whether
// the end was read, which returns the connection to the pool.
func readAnswer(body io.Reader, length, max int64) (answer []byte, eof bool, err error) {
	if length == 0 {
		return nil, true, nil
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
			return buf, true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	return buf, false, nil
}

// outcome turns an answer into the batch's outcome.
func (s *sender) outcome(b *orderly.Batch, resp answerHead, body []byte) error {
	if resp.code < 200 || resp.code > 299 {
		return s.answerError(resp, body, nil)
	}
	if int64(len(body)) > s.maxBytes {
		return s.answerError(resp, body, fmt.Errorf("the body is larger than max_response_bytes (%d)", s.maxBytes))
	}
	a, err := decodeFullAnswer(body)
	if err != nil {
		return s.answerError(resp, body, err)
	}
	if a == nil {
		return nil
	}
	if err := checkEmits(b, a); err != nil {
		return s.answerError(resp, body, err)
	}
	if len(a.State) > 0 || len(a.Timers) > 0 {
		s.applyStates(b, a)
	}
	applyEmits(b, a)
	return s.failIDs(b, a.Failed)
}

// failIDs returns the error that fails the ids of failed that are in b. It
// returns nil when no id of b failed. The ids not in b are ignored, and
// logged in one line per answer, however many there are: their count and
// the first maxLoggedIDs of them, in order.
func (s *sender) failIDs(b *orderly.Batch, failed map[string]string) error {
	errs := make(map[string]error)
	for _, j := range b.Jobs {
		if msg, ok := failed[j.ID]; ok {
			errs[j.ID] = receiverError(msg)
		}
	}
	if foreign := len(failed) - len(errs); foreign > 0 {
		ids := make([]string, 0, foreign)
		for id := range failed {
			if _, ok := errs[id]; !ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		shown := ids[:min(len(ids), maxLoggedIDs)]
		for i, id := range shown {
			shown[i] = truncateID(id)
		}
		s.logger.Warn("webhook: the receiver failed ids that are not in the batch; ignored",
			slog.String("queue", b.Queue),
			slog.String("delivery", b.Delivery),
			slog.String("url", s.safeURL),
			slog.Int("count", len(ids)),
			slog.Any("job_ids", shown))
	}
	return orderly.FailIDs(errs)
}

// maxLoggedIDs is how many of the ids not in a batch the log line of an
// answer names.
const maxLoggedIDs = 10

// maxLoggedIDBytes is how much of such an id the line shows.
const maxLoggedIDBytes = 64

// truncateID shortens an id of the receiver's for a log line.
func truncateID(id string) string {
	if len(id) <= maxLoggedIDBytes {
		return id
	}
	return string(trimPartialRune([]byte(id[:maxLoggedIDBytes]))) + "…"
}

// receiverError is the error of an id that the receiver failed with msg.
func receiverError(msg string) error {
	if msg == "" {
		return errors.New("webhook: failed by the receiver (no message)")
	}
	return errors.New(msg)
}

// answerError is the error of an answer that fails the whole batch: its
// status, why (when the status alone does not say) and the start of its
// body.
func (s *sender) answerError(resp answerHead, body []byte, why error) error {
	msg := fmt.Sprintf("webhook: %s answered %s", s.safeURL, resp.status)
	quoted := quoteBody(body)
	switch {
	case why != nil && quoted != "":
		return fmt.Errorf("%s: %w: %s", msg, why, quoted)
	case why != nil:
		return fmt.Errorf("%s: %w", msg, why)
	case quoted != "":
		return fmt.Errorf("%s: %s", msg, quoted)
	}
	return errors.New(msg)
}

// requestError is the error of a request that got no (complete) answer:
// the delivery's timeout passed, ctx ended, or the connection failed.
func (s *sender) requestError(ctx context.Context, doing string, err error) error {
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

// closeIdleConnections closes the idle connections of the sender's client.
func (s *sender) closeIdleConnections() {
	if s.h1 != nil {
		s.h1.closeIdle()
	}
	s.client.CloseIdleConnections()
}

// closeBody drains a little of what is left of body unless its end was
// read (eof), so that its connection can be reused, and closes it.
func closeBody(body io.ReadCloser, eof bool) {
	if !eof {
		_, _ = io.CopyN(io.Discard, body, maxDrainBytes)
	}
	_ = body.Close()
}
