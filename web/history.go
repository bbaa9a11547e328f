package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// HistoryReader reads the per-minute history of queues: the samples of the
// last minutes minutes (1 to MaxHistoryMinutes) of each named queue, oldest
// first. The binary's reader keeps them in Redis, written once a minute by
// every node (docs/http-api.md).
type HistoryReader interface {
	Read(ctx context.Context, queues []string, minutes int) (map[string][]apiv1.Minute, error)
}

// MaxHistoryMinutes is the most minutes the history endpoints answer: a day.
const MaxHistoryMinutes = 1440

// defaultHistoryMinutes is the history answered without minutes=.
const defaultHistoryMinutes = 60

// historyMinutes reads the minutes parameter of the history endpoints.
func (s *Server) historyMinutes(r *http.Request) (int, error) {
	if s.history == nil {
		return 0, &apiError{status: http.StatusNotFound, msg: "no history: this server keeps none (web.Config.History)"}
	}
	vals, err := queryParams(r, "minutes")
	if err != nil {
		return 0, err
	}
	n, err := countParam(vals, "minutes", MaxHistoryMinutes)
	if n == 0 && err == nil {
		n = defaultHistoryMinutes
	}
	return n, err
}

// queueHistory serves GET /api/v1/queues/{q}/history?minutes=N: the
// queue's metrics at the turn of each of the last N minutes [60, at most
// 1440], oldest first.
func (s *Server) queueHistory(w http.ResponseWriter, r *http.Request) error {
	minutes, err := s.historyMinutes(r)
	if err != nil {
		return err
	}
	q := r.PathValue("q")
	if err := persistence.ValidateQueueName(q); err != nil {
		return err
	}
	specs, err := s.store.Queues(r.Context())
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(specs, func(spec persistence.QueueSpec) bool { return spec.Name == q }) {
		return persistence.ErrUnknownQueue
	}
	h, err := s.history.Read(r.Context(), []string{q}, minutes)
	if err != nil {
		return err
	}
	ans := apiv1.History{Queue: q, Minutes: h[q]}
	if ans.Minutes == nil {
		ans.Minutes = []apiv1.Minute{}
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

// allHistory serves GET /api/v1/history?minutes=N: the totals of every
// registered queue at the turn of each of the last N minutes, as
// /api/v1/stats sums them (the lag is the largest). A minute's processed
// and failed sum the queues that have counts for it; null when none has.
func (s *Server) allHistory(w http.ResponseWriter, r *http.Request) error {
	minutes, err := s.historyMinutes(r)
	if err != nil {
		return err
	}
	specs, err := s.store.Queues(r.Context())
	if err != nil {
		return err
	}
	names := make([]string, len(specs))
	for i, q := range specs {
		names[i] = q.Name
	}
	h, err := s.history.Read(r.Context(), names, minutes)
	if err != nil {
		return err
	}
	byT := map[float64]*apiv1.Minute{}
	for _, pts := range h {
		for _, p := range pts {
			m := byT[p.T]
			if m == nil {
				m = &apiv1.Minute{T: p.T}
				byT[p.T] = m
			}
			m.Length += p.Length
			m.MorgueLength += p.MorgueLength
			m.Busy += p.Busy
			m.Lag = max(m.Lag, p.Lag)
			if p.Processed != nil {
				m.Processed = ptr(deref(m.Processed) + *p.Processed)
			}
			if p.Failed != nil {
				m.Failed = ptr(deref(m.Failed) + *p.Failed)
			}
		}
	}
	ans := apiv1.History{Minutes: make([]apiv1.Minute, 0, len(byT))}
	for _, m := range byT {
		ans.Minutes = append(ans.Minutes, *m)
	}
	slices.SortFunc(ans.Minutes, func(a, b apiv1.Minute) int { return cmp.Compare(a.T, b.T) })
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}

func ptr(n int64) *int64 { return &n }

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
