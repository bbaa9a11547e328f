package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// maxTimeSeconds is the latest perform_at the store accepts, in unix
// seconds (it must survive the round trip through float seconds).
const maxTimeSeconds = 1 << 34

// enqueueWait is how long an enqueue request waits for a slot before it is
// answered 503.
const enqueueWait = 10 * time.Second

// emptyPayload is the payload of a job that gives none: the JSON string "".
const emptyPayload = `""`

// enqueueAnswer is the answer of POST /api/v1/queues/{q}/jobs.
type enqueueAnswer struct {
	Enqueued int `json:"enqueued"`
}

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
	s.writeJSON(w, r, http.StatusAccepted, enqueueAnswer{Enqueued: len(jobs)})
	return nil
}

// decodeJobs decodes a well-formed enqueue body: a JSON array of job
// objects. now is the time perform_in counts from.
func (s *Server) decodeJobs(body []byte, now time.Time) ([]persistence.NewJob, error) {
	if k := kindOf(body); k != "an array" {
		return nil, badField("jobs", "must be a JSON array of jobs, got %s", k)
	}
	var jobs []persistence.NewJob
	err := eachElement(body, func(i int, val []byte) error {
		job, err := DecodeJob(val, i, now, s.maxPayload)
		jobs = append(jobs, job)
		return err
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// Fields of a job object.
const (
	fID = 1 << iota
	fPayload
	fPayloadBase64
	fScore
	fPerformAt
	fPerformIn
)

// jobFields lists the fields of a job object, for messages.
const jobFields = "id, payload, payload_base64, score, perform_at, perform_in"

// DecodeJob checks and decodes one job object of an enqueue request, as
// the API does:
//
//	{"id": "order-1", "payload": <any JSON> | "payload_base64": "<base64>",
//	 "score": <number>, "perform_at": <unix seconds> | "perform_in": <seconds>}
//
// val must be well-formed JSON (json.Valid). index is the job's position in
// its request (-1 for a job on its own), now the time perform_in counts
// from, and maxPayload the limit of a payload's stored bytes (<= 0 means
// persistence.DefaultMaxPayloadBytes). A JSON payload is stored in compact
// form; a job without one gets the JSON string "". Errors are
// *persistence.FieldError naming the field. The checks that need the store
// (the id's length and the like, persistence.ValidateJobs) are not made.
func DecodeJob(val []byte, index int, now time.Time, maxPayload int) (persistence.NewJob, error) {
	if maxPayload <= 0 {
		maxPayload = persistence.DefaultMaxPayloadBytes
	}
	var (
		job                  persistence.NewJob
		seen                 int
		performAt, performIn float64
	)
	bad := func(key, format string, args ...any) error {
		return &persistence.FieldError{Field: truncate(key, 64), Index: index, Reason: fmt.Sprintf(format, args...)}
	}
	if k := kindOf(val); k != "an object" {
		return job, bad("", "must be a JSON object, got %s", k)
	}
	err := eachField(val, func(key string, val []byte) error {
		var f int
		var err error
		switch key {
		case "id":
			f = fID
			job.ID, err = decodeString(val)
		case "payload":
			f = fPayload
			job.Payload, err = compactPayload(val, maxPayload)
		case "payload_base64":
			f = fPayloadBase64
			job.Payload, err = decodeBase64(val, maxPayload)
		case "score":
			f = fScore
			var score float64
			score, err = finiteNumber(val)
			job.Score = &score
		case "perform_at":
			f = fPerformAt
			performAt, err = finiteNumber(val)
			if err == nil && (performAt < 0 || performAt > maxTimeSeconds) {
				err = fmt.Errorf("out of range: must be unix seconds between 0 and %d", int64(maxTimeSeconds))
			}
		case "perform_in":
			f = fPerformIn
			performIn, err = finiteNumber(val)
			if err == nil && performIn < 0 {
				err = errors.New("must not be negative")
			}
		default:
			return bad(key, "unknown field (known: %s)", jobFields)
		}
		if seen&f != 0 {
			return bad(key, "given more than once")
		}
		seen |= f
		if err != nil {
			return bad(key, "%v", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return job, err
	case seen&fID == 0:
		return job, bad("id", "required")
	case seen&fPayload != 0 && seen&fPayloadBase64 != 0:
		return job, bad("payload_base64", "give payload or payload_base64, not both")
	case seen&fPerformAt != 0 && seen&fPerformIn != 0:
		return job, bad("perform_in", "give perform_at or perform_in, not both")
	}
	if seen&(fPayload|fPayloadBase64) == 0 {
		job.Payload = []byte(emptyPayload)
	}
	if seen&fPerformAt != 0 {
		job.PerformAt = persistence.FromUnixSeconds(performAt)
	}
	if seen&fPerformIn != 0 {
		sec := persistence.UnixSeconds(now) + performIn
		if sec > maxTimeSeconds {
			return job, bad("perform_in", "out of range: the time would be after unix second %d", int64(maxTimeSeconds))
		}
		job.PerformAt = persistence.FromUnixSeconds(sec)
	}
	return job, nil
}

// compactPayload returns a payload value's compact encoding: insignificant
// whitespace removed, key order and escapes kept.
func compactPayload(val []byte, maxPayload int) ([]byte, error) {
	if !compactJSON(val) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, val); err != nil {
			return nil, err
		}
		val = buf.Bytes()
	}
	return val, checkPayloadSize(len(val), maxPayload)
}

// decodeBase64 decodes a payload_base64 value: a JSON string in standard
// base64 (with padding).
func decodeBase64(val []byte, maxPayload int) ([]byte, error) {
	str, err := decodeString(val)
	if err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return nil, fmt.Errorf("not valid standard base64: %w", err)
	}
	return data, checkPayloadSize(len(data), maxPayload)
}

// checkPayloadSize rejects a payload of n stored bytes over the limit.
func checkPayloadSize(n, maxPayload int) error {
	if n > maxPayload {
		return fmt.Errorf("%d bytes, more than the limit of %d", n, maxPayload)
	}
	return nil
}
