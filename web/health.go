package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// healthz serves GET /healthz: liveness, the process answers.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, r, http.StatusOK, apiv1.Status{Status: "ok"})
	return nil
}

// readyz serves GET /readyz: 200 when Config.Ready (or, without one, the
// store's Ping) succeeds within readyTimeout, 503 with the reason otherwise.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if s.ready == nil {
		if err := s.store.Ping(ctx); err != nil {
			s.log.Warn("web: not ready: store unreachable", s.requestAttrs(r, err)...)
			return &apiError{status: http.StatusServiceUnavailable, msg: "store unreachable"}
		}
	} else if err := s.ready(ctx); err != nil {
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			msg = "readiness check timed out after " + readyTimeout.String()
		}
		return &apiError{status: http.StatusServiceUnavailable, msg: msg}
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.Status{Status: "ready"})
	return nil
}
