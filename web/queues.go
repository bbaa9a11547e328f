package web

import (
	"context"
	"net/http"
	"slices"

	"github.com/orderlyhq/orderly/persistence"
)

// queueView is a queue and its metrics (SPEC 3.10) in an answer. Times are
// unix seconds; oldest_due is null when nothing is queued.
type queueView struct {
	Name         string   `json:"name"`
	Shards       int      `json:"shards"`
	Length       int64    `json:"length"`
	Fresh        int64    `json:"fresh"`
	Retries      int64    `json:"retries"`
	MorgueLength int64    `json:"morgue_length"`
	Lag          float64  `json:"lag"`
	Busy         int64    `json:"busy"`
	Processed    int64    `json:"processed"`
	Failed       int64    `json:"failed"`
	OldestDue    *float64 `json:"oldest_due"`
}

func queueViewOf(st persistence.QueueStats) queueView {
	v := queueView{
		Name:         st.Name,
		Shards:       st.Shards,
		Length:       st.Length,
		Fresh:        st.Fresh,
		Retries:      st.Retries,
		MorgueLength: st.MorgueLength,
		Lag:          st.Lag,
		Busy:         st.Busy,
		Processed:    st.Processed,
		Failed:       st.Failed,
	}
	if !st.OldestDue.IsZero() {
		at := persistence.UnixSeconds(st.OldestDue)
		v.OldestDue = &at
	}
	return v
}

// queuesAnswer is the answer of GET /api/v1/queues.
type queuesAnswer struct {
	Queues []queueView `json:"queues"`
}

// listQueues serves GET /api/v1/queues: every registered queue with its
// metrics, by name.
func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	all, err := s.allStats(r.Context())
	if err != nil {
		return err
	}
	ans := queuesAnswer{Queues: make([]queueView, len(all))}
	for i, st := range all {
		ans.Queues[i] = queueViewOf(st)
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

// getQueue serves GET /api/v1/queues/{q}: one queue with its metrics.
func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	st, err := s.store.Stats(r.Context(), r.PathValue("q"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, queueViewOf(st[0]))
	return nil
}

// allStats returns the metrics of every queue registered in the store, by
// name.
func (s *Server) allStats(ctx context.Context) ([]persistence.QueueStats, error) {
	specs, err := s.store.Queues(ctx)
	if err != nil || len(specs) == 0 {
		return nil, err
	}
	names := make([]string, len(specs))
	for i, q := range specs {
		names[i] = q.Name
	}
	slices.Sort(names)
	return s.store.Stats(ctx, names...)
}
