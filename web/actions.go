package web

import (
	"context"
	"fmt"
	"net/http"

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
