package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// bodyWait is how long a request waits for room in the body budget, or for
// an enqueue slot, before it is answered 503.
const bodyWait = 10 * time.Second

// A request body is read under three rules, so that a client cannot hold
// the server's connections or memory by sending slowly or not at all:
//
//   - the body must arrive within Config.BodyReadTimeout of the end of the
//     header (a read deadline on the connection); a late body is answered
//     408;
//   - its bytes are counted in the server's budget as they arrive, and
//     held until the request ends;
//   - an answer sent before the body was read to its end (401, 413, an
//     unknown route...) closes the connection, and the server does not read
//     the rest: net/http would otherwise read up to 256 KiB of it before
//     (or after) answering, waiting on a client that may never send it.

// requestBody is a request's body as the server reads it.
type requestBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	eof  bool  // read to its end
	held int64 // bytes of the budget this request holds
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		// The body is in: lift its deadline, which would otherwise cancel
		// the request's context while the handler works.
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// answerWriter closes the connection after an answer sent before the
// request's body was read to its end.
type answerWriter struct {
	http.ResponseWriter
	body  *requestBody
	wrote bool
}

func (w *answerWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if !w.body.eof {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// guardBody sets the body's read deadline and returns the writer and
// request the handlers use, and done, to call when the request ends: it
// gives up an unread body at once and releases the body's budget.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	if r.Body == nil || r.Body == http.NoBody {
		return w, r, func() {}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)) // ErrNotSupported outside a server
	body := &requestBody{ReadCloser: r.Body, rc: rc}
	r = r.WithContext(r.Context()) // a copy: handlers must not change the caller's request
	r.Body = body
	return &answerWriter{ResponseWriter: w, body: body}, r, func() {
		if !body.eof {
			// The connection closes after this answer: make the server's
			// last read of the body, when the handler returns, fail at once.
			_ = rc.SetReadDeadline(time.Now())
		}
		s.bodies.release(body.held)
	}
}

// readBody reads a request body of at most maxBody bytes, counting its
// bytes in the budget as they arrive.
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	tooLarge := func() error { // made only when needed: readBody serves every write
		return &apiError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request body is larger than the limit of %d bytes", s.maxBody)}
	}
	if r.ContentLength > s.maxBody {
		return nil, tooLarge()
	}
	body, ok := r.Body.(*requestBody)
	if !ok { // no body
		return nil, nil
	}
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		room := buf[len(buf):min(cap(buf), int(s.maxBody)+1)]
		n, err := body.Read(room)
		if n > 0 {
			if err := s.bodies.acquire(r.Context(), int64(n)); err != nil {
				return nil, err
			}
			body.held += int64(n)
			buf = buf[:len(buf)+n]
			if int64(len(buf)) > s.maxBody {
				return nil, tooLarge()
			}
		}
		switch {
		case err == io.EOF:
			return buf, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, &apiError{status: http.StatusRequestTimeout,
				msg: fmt.Sprintf("the request body did not arrive within %s", s.bodyTimeout)}
		case err != nil:
			return nil, badRequest("reading the request body: %v", err)
		}
	}
}

// budget bounds the bytes of request bodies held at once.
type budget struct {
	max   int64
	mu    sync.Mutex // guards used and freed
	used  int64
	freed chan struct{} // closed, and replaced, when bytes are released
}

func newBudget(max int64) *budget {
	return &budget{max: max, freed: make(chan struct{})}
}

// errBodiesBusy answers a request whose body does not fit in the budget.
var errBodiesBusy = &apiError{status: http.StatusServiceUnavailable,
	msg: "busy: too many request bodies in flight; retry later"}

// acquire takes n bytes, waiting up to bodyWait for them.
func (b *budget) acquire(ctx context.Context, n int64) error {
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(bodyWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return errBodiesBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives n bytes back.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}
