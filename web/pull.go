package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// Puller serves the pull routes (docs/contract.md §6.6): *pull.Broker.
// Its methods are called concurrently by requests; Pull blocks up to its
// wait, Answer until the waiting call took or refused the answer.
type Puller interface {
	Pull(ctx context.Context, queue string, maxIDs int, wait time.Duration) (*pull.Lease, error)
	Answer(queue, lease string, a *wire.Answer) (lost []string, err error)
	Extend(queue, lease string, by time.Duration) (time.Time, error)
}

// pullChecker is a Puller that checks a pull's values without pulling
// (*pull.Broker): an answer's next pull is checked before the answer is
// taken.
type pullChecker interface {
	CheckPull(queue string, maxIDs int) error
}

// pullStats is a Puller that counts its workers (*pull.Broker): GET
// /api/v1/queues shows them.
type pullStats interface {
	Stats() map[string]pull.Stats
}

// pullRoutes registers the pull routes.
func (s *Server) pullRoutes() {
	s.handle("POST /api/v1/queues/{q}/pull", s.pullBatch)
	s.handle("POST /api/v1/queues/{q}/pull/{lease}/answer", s.pullAnswer)
	s.handle("POST /api/v1/queues/{q}/pull/{lease}/extend", s.pullExtend)
}

// decodePullRequest decodes and checks the body of a pull. It must not
// panic on any input.
func decodePullRequest(body []byte) (apiv1.PullRequest, time.Duration, error) {
	var req apiv1.PullRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return req, 0, badRequest(`the body must be {"max_ids": n, "wait": seconds}`)
	}
	if req.MaxIDs < 1 {
		return req, 0, badField("max_ids", "max_ids must be at least 1, got %d", req.MaxIDs)
	}
	if math.IsNaN(req.Wait) || req.Wait < 0 || req.Wait > apiv1.MaxPullWait {
		return req, 0, badField("wait", "wait must be 0 to %d seconds", apiv1.MaxPullWait)
	}
	return req, time.Duration(req.Wait * float64(time.Second)), nil
}

// pullBatch serves POST /api/v1/queues/{q}/pull.
func (s *Server) pullBatch(w http.ResponseWriter, r *http.Request) error {
	if s.puller == nil {
		return &apiError{status: http.StatusNotFound, msg: "this node serves no pull queue"}
	}
	body, err := s.readJSONBody(r, `{"max_ids": n, "wait": seconds}`)
	if err != nil {
		return err
	}
	req, wait, err := decodePullRequest(body)
	if err != nil {
		return err
	}
	l, err := s.puller.Pull(r.Context(), r.PathValue("q"), req.MaxIDs, wait)
	switch {
	case errors.Is(err, pull.ErrStopped):
		return &apiError{status: http.StatusServiceUnavailable, msg: err.Error()}
	case err != nil:
		return pullValueError(err, "max_ids")
	case l == nil:
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	buf := getPullBuf()
	defer putPullBuf(buf)
	*buf, err = appendPullLease((*buf)[:0], leaseOut(l))
	s.writePullJSON(w, r, *buf, err)
	return nil
}

// pullValueError is the answer to a pull refused for its values: 404 for
// a queue that is not a pull queue of the node, 400 naming field for
// max_ids below the batch size.
func pullValueError(err error, field string) error {
	switch {
	case errors.Is(err, pull.ErrUnknownQueue):
		return &apiError{status: http.StatusNotFound, msg: err.Error()}
	case errors.Is(err, pull.ErrMaxIDs):
		return badField(field, "%s", err.Error())
	}
	return err
}

// pullAnswer serves POST /api/v1/queues/{q}/pull/{lease}/answer.
func (s *Server) pullAnswer(w http.ResponseWriter, r *http.Request) error {
	if s.puller == nil {
		return &apiError{status: http.StatusNotFound, msg: "this node serves no pull queue"}
	}
	body, err := s.readBody(r)
	if err != nil {
		return err
	}
	if jsonscan.SkipSpace(body, 0) < len(body) {
		if err := checkJSONType(r); err != nil {
			return err
		}
	}
	a, next, err := webhook.DecodePullAnswer(body)
	if err != nil {
		return badRequest("the answer must be empty, {} or a webhook answer: %s", strings.TrimPrefix(err.Error(), webhook.ErrBadAnswer.Error()+": "))
	}
	q := r.PathValue("q")
	if c, ok := s.puller.(pullChecker); ok && next != nil {
		if err := c.CheckPull(q, next.MaxIDs); err != nil {
			return pullValueError(err, "next.max_ids")
		}
	}
	lost, err := s.puller.Answer(q, r.PathValue("lease"), a)
	if err != nil {
		return s.pullError(w, r, err)
	}
	out := apiv1.PullAnswered{Accepted: true, Lost: lost}
	if next != nil {
		// The answer is taken: a next pull that fails (the node
		// stopping) only leaves the next lease out.
		if l, err := s.puller.Pull(r.Context(), q, next.MaxIDs, next.Wait); err == nil && l != nil {
			out.Next = leaseOut(l)
		}
	}
	buf := getPullBuf()
	defer putPullBuf(buf)
	*buf, err = appendPullAnswered((*buf)[:0], &out)
	s.writePullJSON(w, r, *buf, err)
	return nil
}

// leaseOut is the 200 shape of a pulled lease.
func leaseOut(l *pull.Lease) *apiv1.PullLease {
	return &apiv1.PullLease{Lease: l.ID, Deadline: unixSeconds(l.Deadline), Jobs: l.Jobs}
}

// pullExtend serves POST /api/v1/queues/{q}/pull/{lease}/extend.
func (s *Server) pullExtend(w http.ResponseWriter, r *http.Request) error {
	if s.puller == nil {
		return &apiError{status: http.StatusNotFound, msg: "this node serves no pull queue"}
	}
	body, err := s.readJSONBody(r, `{"by": seconds}`)
	if err != nil {
		return err
	}
	var req apiv1.PullExtend
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return badRequest(`the body must be {"by": seconds}`)
	}
	if math.IsNaN(req.By) || req.By <= 0 || req.By > wire.MaxPerformIn {
		return badField("by", "by must be a positive number of seconds")
	}
	d, err := s.puller.Extend(r.PathValue("q"), r.PathValue("lease"), time.Duration(req.By*float64(time.Second)))
	if err != nil {
		return s.pullError(w, r, err)
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.PullDeadline{Deadline: unixSeconds(d)})
	return nil
}

// pullError answers a refused answer or extension: 409 with the reason
// for a lease no longer valid, 400 for a bad answer.
func (s *Server) pullError(w http.ResponseWriter, r *http.Request, err error) error {
	var le *pull.LeaseError
	if errors.As(err, &le) {
		s.writeJSON(w, r, http.StatusConflict, apiv1.PullConflict{Error: err.Error(), Reason: le.Reason})
		return nil
	}
	if errors.Is(err, webhook.ErrBadAnswer) {
		return badRequest("%s", strings.TrimPrefix(err.Error(), webhook.ErrBadAnswer.Error()+": "))
	}
	return err
}

// unixSeconds is t in unix seconds, to the millisecond.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// workerRoute reports whether r is a pull route of queue: what a worker
// token opens.
func workerRoute(r *http.Request, queue string) bool {
	if r.Method != http.MethodPost {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/queues/"+queue+"/pull")
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 3 && parts[0] == "" && parts[1] != "" && (parts[2] == "answer" || parts[2] == "extend")
}
