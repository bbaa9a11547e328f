package web

import (
	"net/http"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// periodic serves GET /api/v1/periodic (docs/contract.md §6.3, §9): the
// node's periodic jobs with their last and next tick.
func (s *Server) periodic(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	ans := apiv1.PeriodicJobs{Periodic: []apiv1.Periodic{}}
	if s.listPeriodic != nil {
		jobs, err := s.listPeriodic(r.Context())
		if err != nil {
			return err
		}
		if jobs != nil {
			ans.Periodic = jobs
		}
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
