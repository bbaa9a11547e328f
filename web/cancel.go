package web

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// cancelJob serves POST /api/v1/queues/{q}/jobs/{id}/actions/cancel
// (docs/contract.md §3.13): the body is empty, {} or {"mode": "kill"|
// "delete"} (kill by default). It answers apiv1.Cancelled: what was done
// to the queued payloads and whether a call in flight was signalled; 404
// when the id is neither queued nor in flight.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request, q, id string) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	mode, err := s.readCancelBody(r)
	if err != nil {
		return err
	}
	res, err := s.store.CancelJob(r.Context(), q, id, mode)
	if err != nil {
		return err
	}
	if !res.Found() {
		return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("job %q is neither queued nor in flight in %q", id, q)}
	}
	out := apiv1.Cancelled{Mode: string(mode), InFlight: res.InFlight}
	if mode == persistence.CancelDelete {
		out.Deleted = res.Payloads
	} else {
		out.Killed = res.Payloads
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// readCancelBody reads a cancel's optional body and returns its mode.
func (s *Server) readCancelBody(r *http.Request) (persistence.CancelMode, error) {
	body, err := s.readBody(r)
	if err != nil {
		return "", err
	}
	if jsonscan.SkipSpace(body, 0) == len(body) {
		return persistence.CancelKill, nil
	}
	if err := checkJSONType(r); err != nil {
		return "", err
	}
	if err := checkJSON(body); err != nil {
		return "", err
	}
	if k := jsonscan.KindOf(body); k != "an object" {
		return "", badRequest("the body must be an object such as {\"mode\": \"delete\"}, got %s", k)
	}
	mode := ""
	err = jsonscan.EachField(body, func(key, val []byte) error {
		if string(key) != "mode" {
			return badField(jsonscan.Truncate(string(key), 64), "unknown field: the body takes only \"mode\"")
		}
		if err := json.Unmarshal(val, &mode); err != nil {
			return badField("mode", "must be \"kill\" or \"delete\"")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	m, err := persistence.ParseCancelMode(mode)
	if err != nil {
		return "", badField("mode", "must be \"kill\" or \"delete\", got %q", jsonscan.Truncate(mode, 64))
	}
	return m, nil
}
