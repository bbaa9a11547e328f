package web

import (
	"context"
	"net/http"
	"slices"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// queueOf is a queue's answer: its metrics, and the limits this node is
// configured with.
func (s *Server) queueOf(st persistence.QueueStats) apiv1.Queue {
	v := apiv1.Queue{
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
		Snoozed:      st.Snoozed,
		Discarded:    st.Discarded,
		Expired:      st.Expired,
		Cancelled:    st.Cancelled,
		Paused:       st.Paused,
	}
	if !st.OldestDue.IsZero() {
		at := persistence.UnixSeconds(st.OldestDue)
		v.OldestDue = &at
	}
	if l, ok := s.queueLimits[st.Name]; ok {
		v.MaxConcurrency = l.MaxConcurrency
		if l.RateLimit != nil {
			r := *l.RateLimit
			v.RateLimit = &r
		}
	}
	if ps, ok := s.puller.(pullStats); ok {
		if st, ok := ps.Stats()[st.Name]; ok {
			v.Pull = &apiv1.PullQueue{WaitingWorkers: st.Waiting, HeldLeases: st.Held, PendingBatches: st.Pending}
		}
	}
	return v
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
	ans := apiv1.Queues{Queues: make([]apiv1.Queue, len(all))}
	for i, st := range all {
		ans.Queues[i] = s.queueOf(st)
		if ans.Queues[i].Reshard, err = s.reshardStatus(r.Context(), st); err != nil {
			return err
		}
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
	v := s.queueOf(st[0])
	if v.Reshard, err = s.reshardStatus(r.Context(), st[0]); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, v)
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
