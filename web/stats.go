package web

import (
	"net/http"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// stats serves GET /api/v1/stats over every queue registered in the store.
// The total lag is the maximum over queues; the other totals are sums.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	all, err := s.allStats(r.Context())
	if err != nil {
		return err
	}
	ans := apiv1.Stats{ByWorker: make(map[string]apiv1.StatsCounts, len(all))}
	for _, st := range all {
		ans.ByWorker[st.Name] = apiv1.StatsCounts{Length: st.Length, MorgueLength: st.MorgueLength, Lag: st.Lag, Paused: st.Paused}
		ans.Total.Length += st.Length
		ans.Total.MorgueLength += st.MorgueLength
		ans.Total.Lag = max(ans.Total.Lag, st.Lag)
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
