package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// msgInternal is the answer to failures whose detail stays in the log.
const msgInternal = "internal error; the server log has the details"

// apiError is an error answer: its status, its message and the field at
// fault (empty when none is).
type apiError struct {
	status int
	msg    string
	field  string
	allow  string // the Allow header of a 405
	// retryAfter is the Retry-After header (seconds) of a refusal that
	// passes; a 503 without one gets "1".
	retryAfter string
}

func (e *apiError) Error() string { return e.msg }

// badField is a 400 naming the field at fault; the message starts with it.
func badField(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, field: field, msg: field + ": " + fmt.Sprintf(format, args...)}
}

// badRequest is a 400 that no single field is at fault for.
func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// writeError answers err; it is the one place that turns errors into
// answers. Validation errors of the store become 400s naming the field,
// unknown queues and jobs 404s, a running reshard in the way 409 (another
// reshard) or 503 with Retry-After (an id being moved), an unreachable
// store 503, anything else a
// 500 whose detail is logged, never sent. Answers that refuse a client
// (401, 403, 408, 413, 421) close the connection.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.classify(r, err)
	if e.allow != "" {
		w.Header().Set("Allow", e.allow)
	}
	switch {
	case e.retryAfter != "":
		w.Header().Set("Retry-After", e.retryAfter)
	case e.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	switch e.status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout,
		http.StatusRequestEntityTooLarge, http.StatusMisdirectedRequest:
		// A client refused for who it is or what it sends gets no
		// keep-alive to hold, and its body, if any, is not read.
		w.Header().Set("Connection", "close")
	}
	s.writeJSON(w, r, e.status, apiv1.Error{Error: e.msg, Field: e.field})
}

func (s *Server) classify(r *http.Request, err error) *apiError {
	var (
		ae *apiError
		fe *persistence.FieldError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &fe):
		return &apiError{status: http.StatusBadRequest, field: fe.Path(), msg: fe.Error()}
	case errors.Is(err, persistence.ErrInvalid):
		return badRequest("%v", err)
	case errors.Is(err, persistence.ErrVersionConflict):
		return &apiError{status: http.StatusConflict, field: "version", msg: "version: " + err.Error() + "; read the state again and retry"}
	case errors.Is(err, persistence.ErrUpgradeInProgress):
		// Nothing was changed: a shard still holds data of the previous
		// release that no node of this one moved yet (docs/storage.md §8).
		return &apiError{status: http.StatusConflict, retryAfter: "1",
			msg: "upgrade in progress: " + strings.TrimPrefix(err.Error(), "redisstore: ")}
	case errors.Is(err, persistence.ErrReshardRunning):
		// One reshard of a queue at a time (docs/contract.md §3.17).
		return &apiError{status: http.StatusConflict, field: "shards",
			msg: strings.TrimPrefix(err.Error(), "persistence: ") + "; wait for it to end, or ask for its target count"}
	case errors.Is(err, persistence.ErrResharding):
		// Nothing was changed: the id (or a listing's page) is on its way
		// to its new shard; it will be there shortly.
		return &apiError{status: http.StatusServiceUnavailable, retryAfter: "1",
			msg: "resharding: the queue is being resharded and what this request touches is moving to its new shard; nothing was changed, retry shortly"}
	case errors.Is(err, persistence.ErrUnknownQueue):
		return &apiError{status: http.StatusNotFound, field: "queue", msg: fmt.Sprintf("unknown queue %q", r.PathValue("q"))}
	case errors.Is(err, persistence.ErrNotFound):
		if id := r.PathValue("id"); id != "" {
			return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("job %q not found in queue %q", id, r.PathValue("q"))}
		}
		return &apiError{status: http.StatusNotFound, msg: "not found"}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this answer.
		s.log.Debug("web: request canceled", s.requestAttrs(r, err)...)
		return &apiError{status: http.StatusServiceUnavailable, msg: "request canceled"}
	case errors.Is(err, persistence.ErrNotReplicated):
		// The write is on the master but not on enough replicas: not
		// acknowledged; sending it again is harmless (docs/contract.md §4).
		s.log.Warn("web: write not replicated", s.requestAttrs(r, err)...)
		return &apiError{status: http.StatusServiceUnavailable, msg: "not replicated: too few Redis replicas acknowledged the write in time; retry later"}
	case unavailable(err):
		s.log.Warn("web: store unavailable", s.requestAttrs(r, err)...)
		return &apiError{status: http.StatusServiceUnavailable, msg: "store unavailable; retry later"}
	default:
		s.log.Error("web: request failed", s.requestAttrs(r, err)...)
		return &apiError{status: http.StatusInternalServerError, msg: msgInternal}
	}
}

func (s *Server) requestAttrs(r *http.Request, err error) []any {
	attrs := []any{slog.String("method", r.Method), slog.String("path", r.URL.Path)}
	if q := r.PathValue("q"); q != "" {
		attrs = append(attrs, slog.String("queue", q))
	}
	if id := r.PathValue("id"); id != "" {
		attrs = append(attrs, slog.String("job_id", id))
	}
	return append(attrs, slog.String("error", err.Error()))
}

// unavailable reports whether err means the store cannot be reached or
// cannot serve for now (network errors, timeouts, a server loading its data,
// a cluster without quorum, a full server, one that cannot save its data),
// as opposed to a bug.
func unavailable(err error) bool {
	for _, target := range []error{
		context.DeadlineExceeded, redis.ErrClosed, redis.ErrPoolTimeout, redis.ErrPoolExhausted,
		io.EOF, io.ErrUnexpectedEOF, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, prefix := range []string{"LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ", "BUSY ", "NOREPLICAS ", "OOM ", "MISCONF "} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// writeJSON answers v as JSON with the given status. HTML characters are not
// escaped, so payloads appear byte for byte as stored. A failed write means
// the client went away; there is nobody to tell.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.log.Error("web: encode answer", s.requestAttrs(r, err)...)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"` + msgInternal + `"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
