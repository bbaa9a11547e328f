package web

import (
	"fmt"
	"net/http"
	"slices"

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
	if _, err := queryParams(r); err != nil {
		return err
	}
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

// listedJob is a job of a listing or of an in-flight batch: its id and
// what jobView shows.
type listedJob struct {
	ID string `json:"id"`
	jobView
}

func listedJobs(jobs []persistence.Job) []listedJob {
	out := make([]listedJob, len(jobs))
	for i, j := range jobs {
		out[i] = listedJob{ID: j.ID, jobView: viewOf(j)}
	}
	return out
}

// jobPage is the answer of GET /api/v1/queues/{q}/jobs. next is the cursor
// of the following page, empty on the last.
type jobPage struct {
	Jobs []listedJob `json:"jobs"`
	Next string      `json:"next"`
}

// listJobs serves GET /api/v1/queues/{q}/jobs: a page of queued jobs (not
// those in flight), by id, perform_at or retry_count. Each page costs the
// store O(log n + limit) per shard, however deep the cursor.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	page, err := s.store.ListJobs(r.Context(), r.PathValue("q"), opts)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, jobPage{Jobs: listedJobs(page.Jobs), Next: page.Next})
	return nil
}

// deleteJob serves DELETE /api/v1/queues/{q}/jobs/{id...}: it deletes the
// queued entry of id, all its payloads. An id in flight is not touched:
// its batch is settled by its handler.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	if err := s.readNoBody(w, r); err != nil {
		return err
	}
	q, id := r.PathValue("q"), r.PathValue("id")
	ok, err := s.store.DeleteJob(r.Context(), q, id)
	if err != nil {
		return err
	}
	if !ok {
		return &apiError{status: http.StatusNotFound,
			msg: fmt.Sprintf("job %q is not queued in %q (a job in an in-flight batch is not deleted: its handler settles it)", id, q)}
	}
	s.writeJSON(w, r, http.StatusOK, deletedAnswer{Deleted: 1})
	return nil
}

// batchView is the in-flight batch of a shard, with the owner that fetched
// it.
type batchView struct {
	Shard     int         `json:"shard"`
	Owner     string      `json:"owner"`
	Epoch     int64       `json:"epoch"`
	Seq       int64       `json:"seq"`
	FetchedAt float64     `json:"fetched_at"`
	Jobs      []listedJob `json:"jobs"`
}

// processingAnswer is the answer of GET /api/v1/queues/{q}/processing.
type processingAnswer struct {
	Batches []batchView `json:"batches"`
}

// processing serves GET /api/v1/queues/{q}/processing: the in-flight batch
// of every shard that has one, by shard, with all their payloads.
func (s *Server) processing(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	batches, err := s.store.Processing(r.Context(), r.PathValue("q"))
	if err != nil {
		return err
	}
	slices.SortFunc(batches, func(a, b persistence.InFlightBatch) int { return a.Shard - b.Shard })
	ans := processingAnswer{Batches: make([]batchView, len(batches))}
	for i, b := range batches {
		ans.Batches[i] = batchView{
			Shard:     b.Shard,
			Owner:     b.Owner,
			Epoch:     b.Epoch,
			Seq:       b.Seq,
			FetchedAt: persistence.UnixSeconds(b.FetchedAt),
			Jobs:      listedJobs(b.Jobs),
		}
	}
	s.writeJSON(w, r, http.StatusOK, ans)
	return nil
}
