package web

import "net/http"

// statsCounts are one queue's (or the total's) metrics in Lowkiq's stats
// shape, in Lowkiq's key order.
type statsCounts struct {
	Length       int64   `json:"length"`
	MorgueLength int64   `json:"morgue_length"`
	Lag          float64 `json:"lag"`
}

// statsAnswer is the answer of GET /api/v1/stats, Lowkiq's shape, so that
// a Lowkiq stats scraper keeps working. by_worker is keyed by queue name.
type statsAnswer struct {
	Total    statsCounts            `json:"total"`
	ByWorker map[string]statsCounts `json:"by_worker"`
}

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
	ans := statsAnswer{ByWorker: make(map[string]statsCounts, len(all))}
	for _, st := range all {
		ans.ByWorker[st.Name] = statsCounts{Length: st.Length, MorgueLength: st.MorgueLength, Lag: st.Lag}
		ans.Total.Length += st.Length
		ans.Total.MorgueLength += st.MorgueLength
		ans.Total.Lag = max(ans.Total.Lag, st.Lag)
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
