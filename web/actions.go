package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// queueAction serves POST /api/v1/queues/{q}/actions/{action}, the queue
// actions of docs/contract.md §3.9. Each is synchronous and answers how
// many queued ids it changed: perform_all_now {"updated": n}, kill_failed
// {"killed": n}, delete_failed {"deleted": n}. The body must be empty or {}.
func (s *Server) queueAction(w http.ResponseWriter, r *http.Request) error {
	var (
		key string
		run func(ctx context.Context, queue string) (int, error)
	)
	switch name := r.PathValue("action"); name {
	case "perform_all_now":
		key, run = "updated", s.store.PerformAllNow
	case "kill_failed":
		key, run = "killed", s.store.KillFailed
	case "delete_failed":
		key, run = "deleted", s.store.DeleteFailed
	default:
		return &apiError{status: http.StatusNotFound, field: "action",
			msg: fmt.Sprintf("unknown action %q (known: perform_all_now, kill_failed, delete_failed)", jsonscan.Truncate(name, 64))}
	}
	if _, err := queryParams(r); err != nil {
		return err
	}
	if err := s.readNoBody(r); err != nil {
		return err
	}
	n, err := run(r.Context(), r.PathValue("q"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]int{key: n})
	return nil
}

// jobAction serves POST /api/v1/queues/{q}/jobs/{id}/actions/{action}, the
// actions of one job (docs/contract.md §3.9): perform_now {"updated": 1}
// makes its queued entry due now, kill {"killed": 1} moves all its queued
// payloads to the morgue. The id is everything between "jobs/" and the
// last "/actions/", unescaped, so ids containing '/' work escaped or not.
// cancel (cancel.go) stops the id everywhere, a call in flight included.
// A call in flight for the id is not touched: an id with nothing queued
// is answered 409 when a call holds it, 404 otherwise. The body must be
// empty or {}.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request) error {
	rest := r.PathValue("rest")
	i := strings.LastIndex(rest, "/actions/")
	if i < 0 {
		return &apiError{status: http.StatusNotFound,
			msg: "not found: the actions of one job are POST /api/v1/queues/{q}/jobs/{id}/actions/{perform_now|kill|cancel}"}
	}
	id, name := rest[:i], rest[i+len("/actions/"):]
	if name == "cancel" {
		return s.cancelJob(w, r, r.PathValue("q"), id)
	}
	var (
		key, verb string
		run       func(ctx context.Context, queue, id string) (bool, error)
	)
	switch name {
	case "perform_now":
		key, verb, run = "updated", "made due now", s.store.PerformJobNow
	case "kill":
		key, verb, run = "killed", "killed", s.store.KillJob
	default:
		return &apiError{status: http.StatusNotFound, field: "action",
			msg: fmt.Sprintf("unknown job action %q (known: perform_now, kill, cancel)", jsonscan.Truncate(name, 64))}
	}
	if _, err := queryParams(r); err != nil {
		return err
	}
	if err := s.readNoBody(r); err != nil {
		return err
	}
	q := r.PathValue("q")
	ok, err := run(r.Context(), q, id)
	if err != nil {
		return err
	}
	if !ok {
		if info, err := s.store.GetJob(r.Context(), q, id); err == nil && info.InFlight != nil {
			return &apiError{status: http.StatusConflict,
				msg: fmt.Sprintf("job %q of %q is in flight and has nothing queued: a running call is not %s; it settles as usual", id, q, verb)}
		}
		return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("job %q is not queued in %q", id, q)}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]int{key: 1})
	return nil
}
