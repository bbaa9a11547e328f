package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// msgPartial ends the 5xx answers of an enqueue: the store writes a request
// shard by shard, so a failure may come after some shards were written.
const msgPartial = "part of the request may have been stored: retrying the same request is safe, as a payload already stored merges with its copy"

// enqueue serves POST /api/v1/queues/{q}/jobs. Validation is
// all-or-nothing: every job is checked (here and by the store) before
// anything is written. The writing is atomic per shard, not per request: a
// 5xx answer says that part of it may have been stored.
func (s *Server) enqueue(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	deadline, err := enqueueDeadline(r)
	if err != nil {
		return err
	}
	body, err := s.readUncheckedJSONBody(r, "a JSON array of jobs") // decodeJobs checks the syntax
	if err != nil {
		return err
	}
	// At most MaxConcurrentEnqueues bodies are decoded and stored at once;
	// the slot is taken once the body is in, so that clients slow to send
	// theirs hold no slot (the body budget bounds what they hold).
	select {
	case s.enqueueSlots <- struct{}{}:
		defer func() { <-s.enqueueSlots }()
	case <-r.Context().Done():
		return r.Context().Err()
	case <-time.After(bodyWait):
		return &apiError{status: http.StatusServiceUnavailable, msg: "busy: too many enqueue requests at once; retry later"}
	}
	jobs, err := s.decodeJobs(body, s.now())
	if err != nil {
		return err
	}
	if err := persistence.ValidateJobs(jobs, s.maxPayload); err != nil {
		return err
	}
	// The last thing before the write: a request that waited (for a slot,
	// in a paused process) past its deadline stores nothing.
	if err := s.checkDeadline(deadline); err != nil {
		return err
	}
	res, err := persistence.EnqueueReport(r.Context(), s.store, r.PathValue("q"), jobs)
	if err != nil {
		e := s.classify(r, err)
		if e.status >= 500 {
			e = &apiError{status: e.status, msg: e.msg + "; " + msgPartial}
		}
		return e
	}
	s.writeJSON(w, r, http.StatusAccepted, apiv1.Enqueued{Enqueued: len(jobs), Duplicates: res.Duplicates})
	return nil
}

// enqueueDeadline reads the request's Orderly-Deadline header
// (apiv1.DeadlineHeader); zero when it has none.
func enqueueDeadline(r *http.Request) (time.Time, error) {
	v := r.Header.Get(apiv1.DeadlineHeader)
	if v == "" {
		return time.Time{}, nil
	}
	d, ok := wire.ParseDeadline(v)
	if !ok {
		return time.Time{}, badField(apiv1.DeadlineHeader, "must be an RFC 3339 time such as 2026-11-28T10:00:00.250Z, got %q", jsonscan.Truncate(v, 64))
	}
	return d, nil
}

// checkDeadline refuses, with 408, a write whose deadline (zero: none) is
// not ahead of the node's clock.
func (s *Server) checkDeadline(deadline time.Time) error {
	if deadline.IsZero() {
		return nil
	}
	if now := s.now(); !now.Before(deadline) {
		return &apiError{status: http.StatusRequestTimeout, msg: fmt.Sprintf(
			"the request's %s %s passed %s before the node could store it; nothing was stored",
			apiv1.DeadlineHeader, wire.FormatDeadline(deadline), now.Sub(deadline).Round(time.Millisecond))}
	}
	return nil
}

// decodeJobs decodes an enqueue body, a JSON array of job objects
// (apiv1.NewJob), into the jobs to store, in one pass that also checks the
// syntax (apiv1.DecodeJobs): malformed JSON anywhere in the body is the
// error, else the first job's. now is the time perform_in counts from.
func (s *Server) decodeJobs(body []byte, now time.Time) ([]persistence.NewJob, error) {
	if k := jsonscan.KindOf(body); k != "an array" {
		if err := checkJSON(body); err != nil {
			return nil, err
		}
		return nil, badField("jobs", "must be a JSON array of jobs, got %s", k)
	}
	jobs, err := apiv1.DecodeJobs(body, s.maxPayload, now)
	if errors.Is(err, apiv1.ErrMalformedJSON) {
		return nil, malformed(body, err)
	}
	return jobs, err
}
