package web

import (
	"net/http"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// enqueueWait is how long an enqueue request waits for a slot before it is
// answered 503.
const enqueueWait = 10 * time.Second

// enqueue serves POST /api/v1/queues/{q}/jobs. Validation is
// all-or-nothing: every job is checked (here and by the store) before
// anything is written.
func (s *Server) enqueue(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	// At most MaxConcurrentEnqueues bodies are read and decoded at once, so
	// that a flood of requests cannot hold more than that many bodies in
	// memory; the others wait (holding only their connection) and give up
	// after enqueueWait.
	select {
	case s.enqueueSlots <- struct{}{}:
		defer func() { <-s.enqueueSlots }()
	case <-r.Context().Done():
		return r.Context().Err()
	case <-time.After(enqueueWait):
		return &apiError{status: http.StatusServiceUnavailable, msg: "busy: too many enqueue requests at once; retry later"}
	}
	body, err := s.readJSONBody(w, r, "a JSON array of jobs")
	if err != nil {
		return err
	}
	jobs, err := s.decodeJobs(body, s.now())
	if err != nil {
		return err
	}
	if err := persistence.ValidateJobs(jobs, s.maxPayload); err != nil {
		return err
	}
	if err := s.store.Enqueue(r.Context(), r.PathValue("q"), jobs); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusAccepted, apiv1.Enqueued{Enqueued: len(jobs)})
	return nil
}

// decodeJobs decodes a well-formed enqueue body, a JSON array of job
// objects (apiv1.NewJob), into the jobs to store. now is the time
// perform_in counts from.
func (s *Server) decodeJobs(body []byte, now time.Time) ([]persistence.NewJob, error) {
	if k := jsonscan.KindOf(body); k != "an array" {
		return nil, badField("jobs", "must be a JSON array of jobs, got %s", k)
	}
	var jobs []persistence.NewJob
	err := jsonscan.EachElement(body, func(i int, val []byte) error {
		wire, err := apiv1.DecodeJob(val, i, s.maxPayload)
		if err != nil {
			return err
		}
		job, err := wire.Store(now, i)
		jobs = append(jobs, job)
		return err
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}
