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
