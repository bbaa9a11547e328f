package webhook

import (
	"bytes"
	"encoding/json"
	"log/slog"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// ErrBadAnswer is wrapped by the errors of DecodePullAnswer and
// CheckPullAnswer: the answer is not one the node can take.
var ErrBadAnswer = errBadAnswer

// DecodePullAnswer decodes the answer of a pull worker (docs/contract.md
// §6.6): the shape of a webhook answer, except that an empty object, like
// an empty body, acknowledges every id and returns nil, nil. It must not
// panic on any input.
func DecodePullAnswer(body []byte) (*wire.Answer, error) {
	trimmed := bytes.Trim(body, jsonSpace)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var top map[string]json.RawMessage
		if json.Unmarshal(trimmed, &top) == nil && top != nil && len(top) == 0 {
			return nil, nil
		}
	}
	return decodeAnswer(body)
}

// CheckPullAnswer returns an error wrapping ErrBadAnswer when an emit of a
// names in "from" an id that is not in b, as a webhook answer's would fail
// the request.
func CheckPullAnswer(b *orderly.Batch, a *wire.Answer) error {
	if a == nil {
		return nil
	}
	return checkEmits(b, a)
}

// ApplyPullAnswer turns a decoded answer (nil: every id acknowledged) into
// b's outcome exactly as a webhook's 2xx answer is: the state, timers,
// emits and results go to b's jobs, and the ids the answer fails, snoozes,
// kills or discards make the returned error (nil when none). Ids not in b
// are ignored and logged. Check the answer with CheckPullAnswer first.
func ApplyPullAnswer(b *orderly.Batch, a *wire.Answer, logger *slog.Logger) error {
	if a == nil {
		return nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Sender{logger: logger, safeURL: "pull worker"}
	if len(a.State) > 0 || len(a.Timers) > 0 {
		s.applyStates(b, a)
	}
	applyEmits(b, a)
	s.applyResults(b, a)
	return s.failIDs(b, decisions(a))
}

// PullJobs returns the jobs of b in the shape of a webhook request's jobs
// (wire.Job), for a pull worker.
func PullJobs(b *orderly.Batch) []wire.Job { return requestOf(b).Jobs }
