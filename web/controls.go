package web

import (
	"net/http"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// setPaused serves POST /api/v1/queues/{q}/pause and /resume
// (docs/contract.md §6.3, §9): it answers {"paused": bool}, 404 for an
// unknown queue. The body must be empty or {}.
func (s *Server) setPaused(paused bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := queryParams(r); err != nil {
			return err
		}
		if err := s.readNoBody(r); err != nil {
			return err
		}
		set := s.store.SetPaused
		if s.pause != nil {
			set = s.pause
		}
		if err := set(r.Context(), r.PathValue("q"), paused); err != nil {
			return err
		}
		s.writeJSON(w, r, http.StatusOK, apiv1.Paused{Paused: paused})
		return nil
	}
}

// setQuiet serves POST /api/v1/node/quiet and /resume (docs/operations.md):
// the node serving the request stops processing (its shards finish their
// batches and go to the other nodes) or serves again, as SIGTSTP and
// SIGCONT do. It answers apiv1.NodeQuiet; 404 when the server runs no
// node. The body must be empty or {}.
func (s *Server) setQuiet(quiet bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.quiet == nil {
			return &apiError{status: http.StatusNotFound, msg: "this server runs no node to quiet or resume"}
		}
		if _, err := queryParams(r); err != nil {
			return err
		}
		if err := s.readNoBody(r); err != nil {
			return err
		}
		if err := s.quiet(r.Context(), quiet); err != nil {
			// The node is starting or stopping: try again, or not at all.
			return &apiError{status: http.StatusServiceUnavailable, msg: "the node cannot change now: " + err.Error()}
		}
		ans := apiv1.NodeQuiet{Quiet: quiet}
		if s.isQuiet != nil {
			ans.Quiet = s.isQuiet()
		}
		if s.members != nil {
			ans.Node, _ = s.members(r.Context())
		}
		s.writeJSON(w, r, http.StatusOK, ans)
		return nil
	}
}
