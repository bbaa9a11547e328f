package web

import (
	"net/http"

	"github.com/orderlyhq/orderly/persistence"
)

// jobView is a job in an answer. Times are unix seconds.
type jobView struct {
	PerformAt    float64   `json:"perform_at"`
	RetryCount   int       `json:"retry_count"`
	Error        string    `json:"error"`
	Payloads     []Payload `json:"payloads"`
	PayloadCount int       `json:"payload_count"`
}

func viewOf(j persistence.Job) jobView {
	return jobView{
		PerformAt:    persistence.UnixSeconds(j.PerformAt),
		RetryCount:   j.RetryCount,
		Error:        j.Error,
		Payloads:     payloads(j.Payloads),
		PayloadCount: j.PayloadCount,
	}
}

// processingView is an id's entry in its shard's in-flight batch, with the
// owner that fetched it.
type processingView struct {
	jobView
	Owner     string  `json:"owner"`
	Epoch     int64   `json:"epoch"`
	Seq       int64   `json:"seq"`
	FetchedAt float64 `json:"fetched_at"`
}

// lookupAnswer is the answer of GET /api/v1/queues/{q}/jobs/{id}: the
// queued entry (null when none) and, when the id is in flight, the
// in-flight entry under "processing" with "in_flight": true.
type lookupAnswer struct {
	Queue      string          `json:"queue"`
	Shard      int             `json:"shard"`
	ID         string          `json:"id"`
	InFlight   bool            `json:"in_flight"`
	Queued     *jobView        `json:"queued"`
	Processing *processingView `json:"processing"`
}

// getJob serves GET /api/v1/queues/{q}/jobs/{id...}. The id is the rest of
// the path, unescaped: ids containing '/' work escaped (%2F) or not.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	info, err := s.store.GetJob(r.Context(), r.PathValue("q"), id)
	if err != nil {
		return err
	}
	ans := lookupAnswer{Queue: info.Queue, Shard: info.Shard, ID: id, InFlight: info.InFlight != nil}
	if info.Queued != nil {
		v := viewOf(*info.Queued)
		ans.Queued = &v
	}
	if f := info.InFlight; f != nil {
		ans.Processing = &processingView{
			jobView:   viewOf(f.Job),
			Owner:     f.Owner,
			Epoch:     f.Epoch,
			Seq:       f.Seq,
			FetchedAt: persistence.UnixSeconds(f.FetchedAt),
		}
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
