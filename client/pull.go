package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/webhook/wire"
)

// Defaults of PullWorker.
const (
	// DefaultPullWait is how long one pull waits for a batch.
	DefaultPullWait = 20 * time.Second
	// DefaultPullRetry is the pause after a pull that failed (the node
	// down, a 5xx) before the next.
	DefaultPullRetry = 500 * time.Millisecond
)

// PullLease is a batch a PullWorker holds: the jobs in the webhook
// request's shape, and the lease's deadline.
type PullLease struct {
	ID       string     `json:"lease"`
	Deadline float64    `json:"deadline"` // unix seconds
	Jobs     []wire.Job `json:"jobs"`
}

// PullWorker processes the batches of a pull queue (docs/contract.md §6.6)
// through a node's HTTP API: it pulls, calls Handle, and answers, in
// Concurrency loops. Set the fields, then call Run.
type PullWorker struct {
	// URL is the node's HTTP API, e.g. "http://127.0.0.1:8080". Required.
	URL string
	// Queue is the pull queue. Required.
	Queue string
	// Token is the bearer token: the queue's worker_token or the node's
	// http_token. [none]
	Token string
	// MaxIDs is the most ids of a lease; at least the queue's batch_size.
	// [1]
	MaxIDs int
	// Wait bounds one pull's long poll (at most 30 s). [DefaultPullWait]
	Wait time.Duration
	// Concurrency is how many leases are held at once. [1]
	Concurrency int
	// Extend, when set, extends each lease to Extend after now whenever
	// half the time to its deadline has passed while Handle runs, up to
	// the batch's own deadline. [0: no extension]
	Extend time.Duration
	// Handle processes a lease's jobs. Its context ends at the lease's
	// deadline (moved by extensions). It returns the answer (nil: every
	// id done), or an error, which fails every id of the lease with its
	// message. Required.
	Handle func(ctx context.Context, jobs []wire.Job) (*wire.Answer, error)
	// HTTPClient sends the requests. [Run: a client of its own, with
	// http.DefaultTransport's settings but keeping 2×Concurrency idle
	// connections to the node (http.DefaultTransport keeps 2, so more
	// loops would open a connection per request), closed when Run
	// returns; Pull and Answer called alone: http.DefaultClient]
	HTTPClient *http.Client
	// Logger receives refused answers and failed pulls. [slog.Default()]
	Logger *slog.Logger
}

// errPullStatus is the error of a pull route's unexpected answer.
var errPullStatus = errors.New("client: unexpected answer of a pull route")

// Run runs the loops until ctx ends; it then stops pulling, finishes the
// leases it holds (Handle and answer), and returns nil once every loop
// ended (within Wait after ctx ended: a pull in progress is not cut, so
// that no lease it gets is lost). While ctx lasts, each answer also asks
// for the loop's next lease ("next", docs/contract.md §6.6): one request
// per lease; once ctx ended, answers ask none.
func (w *PullWorker) Run(ctx context.Context) error {
	if w.URL == "" || w.Queue == "" || w.Handle == nil {
		return errors.New("client: PullWorker needs URL, Queue and Handle")
	}
	n := max(w.Concurrency, 1)
	rw := *w // the loops' worker: w's fields, and the client they share
	if rw.HTTPClient == nil {
		rw.HTTPClient = newPullClient(n)
		defer rw.HTTPClient.CloseIdleConnections()
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { rw.loop(ctx) })
	}
	wg.Wait()
	return nil
}

// newPullClient returns the client of Run's n loops without an HTTPClient:
// http.DefaultTransport's settings, keeping an idle connection for each
// loop's pulls and answers and each one's extensions, so that every
// request reuses one. When a program replaced http.DefaultTransport with
// another RoundTripper, it is http.DefaultClient, which uses that.
func newPullClient(n int) *http.Client {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultClient
	}
	tr := dt.Clone()
	tr.MaxIdleConnsPerHost = max(2*n, http.DefaultMaxIdleConnsPerHost)
	tr.MaxIdleConns = max(tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	return &http.Client{Transport: tr}
}

// loop is one of Run's loops.
func (w *PullWorker) loop(ctx context.Context) {
	work := context.WithoutCancel(ctx)
	var l *PullLease // the lease the last answer brought
	for l != nil || ctx.Err() == nil {
		if l == nil {
			var err error
			if l, err = w.Pull(work); err != nil {
				w.logger().Warn("client: pull failed", "queue", w.Queue, "err", err)
				t := time.NewTimer(DefaultPullRetry)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
				continue
			}
			if l == nil {
				continue
			}
		}
		// A lease held is always processed and answered, stopping or
		// not; only a loop still running asks for the next one.
		l = w.process(work, l, ctx.Err() == nil)
	}
}

// process runs Handle on a lease, extending it, and answers it; with
// next, the answer asks for the next lease, which it returns (nil when
// none came or the answer failed).
func (w *PullWorker) process(ctx context.Context, l *PullLease, next bool) *PullLease {
	deadline := time.UnixMilli(int64(l.Deadline * 1000))
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Only the extension loop resets timer, and it ended before the
	// timer is stopped.
	timer := time.AfterFunc(time.Until(deadline), cancel)
	done := make(chan struct{})
	var wg sync.WaitGroup
	if w.Extend > 0 {
		wg.Go(func() {
			// Extend when half the time to the deadline has passed.
			d := deadline
			for {
				t := time.NewTimer(time.Until(d) / 2)
				select {
				case <-done:
					t.Stop()
					return
				case <-t.C:
				}
				nd, err := w.extend(ctx, l.ID, w.Extend)
				if err != nil || !nd.After(d) {
					return // the lease ended or cannot move: the answer will say
				}
				d = nd
				timer.Reset(time.Until(d))
			}
		})
	}
	a, err := w.Handle(hctx, l.Jobs)
	close(done)
	wg.Wait()
	timer.Stop()
	if err != nil {
		a = &wire.Answer{Failed: map[string]string{}}
		for _, j := range l.Jobs {
			a.Failed[j.ID] = err.Error()
		}
	}
	nl, err := w.answer(ctx, l.ID, a, next)
	if err != nil {
		w.logger().Warn("client: answer refused", "queue", w.Queue, "lease", l.ID, "err", err)
	}
	return nl
}

// pullBody is the body of a pull, and of an answer's "next".
func (w *PullWorker) pullBody() []byte {
	wait := w.Wait
	if wait <= 0 {
		wait = DefaultPullWait
	}
	b := make([]byte, 0, 48)
	b = append(b, `{"max_ids":`...)
	b = strconv.AppendInt(b, int64(max(w.MaxIDs, 1)), 10)
	b = append(b, `,"wait":`...)
	b = strconv.AppendFloat(b, wait.Seconds(), 'f', -1, 64)
	return append(b, '}')
}

// Pull asks for one lease, waiting up to Wait; nil, nil when none came.
func (w *PullWorker) Pull(ctx context.Context) (*PullLease, error) {
	code, out, err := w.post(ctx, "/pull", w.pullBody())
	switch {
	case err != nil:
		return nil, err
	case code == http.StatusNoContent:
		return nil, nil
	case code != http.StatusOK:
		return nil, fmt.Errorf("%w: %d %s", errPullStatus, code, out)
	}
	l, err := decodeLease(out)
	if err != nil {
		return nil, fmt.Errorf("client: decoding a lease: %w", err)
	}
	return l, nil
}

// Answer answers a lease (a nil answer: every id done). A refused answer
// (409: nothing committed) is an error naming the reason.
func (w *PullWorker) Answer(ctx context.Context, lease string, a *wire.Answer) error {
	_, err := w.answer(ctx, lease, a, false)
	return err
}

// answer answers a lease; with next, the answer asks for the next lease
// (MaxIDs, Wait) and returns it (nil when none came within Wait).
func (w *PullWorker) answer(ctx context.Context, lease string, a *wire.Answer, next bool) (*PullLease, error) {
	body := []byte(`{}`)
	if a != nil {
		var err error
		if body, err = json.Marshal(a); err != nil {
			return nil, fmt.Errorf("client: encoding an answer: %w", err)
		}
	}
	if next {
		// {"next":{...}} followed by the answer's members, if any.
		pb := w.pullBody()
		nb := make([]byte, 0, len(`{"next":,`)+len(pb)+len(body))
		nb = append(append(nb, `{"next":`...), pb...)
		if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
			nb = append(nb, ',')
		}
		body = append(nb, body[1:]...)
	}
	code, out, err := w.post(ctx, "/pull/"+url.PathEscape(lease)+"/answer", body)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%w: %d %s", errPullStatus, code, out)
	}
	if !next {
		return nil, nil
	}
	l, err := decodeNext(out)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return l, nil
}

// extend extends a lease by by and returns its new deadline.
func (w *PullWorker) extend(ctx context.Context, lease string, by time.Duration) (time.Time, error) {
	body := `{"by":` + strconv.FormatFloat(by.Seconds(), 'f', -1, 64) + `}`
	code, out, err := w.post(ctx, "/pull/"+url.PathEscape(lease)+"/extend", []byte(body))
	if err != nil {
		return time.Time{}, err
	}
	if code != http.StatusOK {
		return time.Time{}, fmt.Errorf("%w: %d %s", errPullStatus, code, out)
	}
	var d struct {
		Deadline float64 `json:"deadline"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		return time.Time{}, fmt.Errorf("client: decoding an extension: %w", err)
	}
	return time.UnixMilli(int64(d.Deadline * 1000)), nil
}

// post POSTs body to the queue's route under path.
func (w *PullWorker) post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/api/v1/queues/"+url.PathEscape(w.Queue)+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("client: pull request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if w.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.Token)
	}
	hc := w.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("client: pull request: %w", err)
	}
	defer resp.Body.Close()
	out, err := readBody(resp, 64<<20)
	if err != nil {
		return 0, nil, fmt.Errorf("client: reading a pull answer: %w", err)
	}
	return resp.StatusCode, out, nil
}

// readBody reads resp's body, at most limit bytes: into one buffer of its
// Content-Length when it has one (the node's pull answers do; io.ReadAll
// would grow a buffer several times for a lease of a hundred jobs).
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	body := io.LimitReader(resp.Body, limit)
	if n := resp.ContentLength; n > 0 && n <= limit {
		out := make([]byte, n+1) // one byte more: a body longer than announced still ends in io.ReadAll
		k, err := io.ReadFull(body, out)
		switch {
		case int64(k) == n && errors.Is(err, io.ErrUnexpectedEOF):
			return out[:k], nil // all of it, as announced
		case err != nil:
			return nil, err // a short body among them
		}
		rest, err := io.ReadAll(body)
		return append(out, rest...), err
	}
	return io.ReadAll(body)
}

func (w *PullWorker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}
