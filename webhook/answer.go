package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/orderlyhq/orderly"
)

const (
	// maxQuotedBody is the most of an answer's body quoted in an error.
	maxQuotedBody = 4 << 10
	// jsonSpace holds the bytes that JSON counts as whitespace.
	jsonSpace = " \t\r\n"
)

// Answer is the body of a 2xx answer that fails some ids of a delivery:
// {"failed": {"<id>": "<error>", ...}}. The ids it does not name are
// acknowledged; a 2xx answer with an empty body acknowledges every id. For
// a stateful queue it may also set or delete the state of ids of the
// delivery: {"state": {"<id>": <JSON value> | null}} (null deletes),
// committed only for the ids that did not fail (docs/contract.md §11).
type Answer struct {
	Failed map[string]string          `json:"failed,omitempty"`
	State  map[string]json.RawMessage `json:"state,omitempty"`
	// Timers sets ("<RFC 3339>") or clears (null) the one timer of ids of
	// the delivery: {"timers": {"<id>": "2026-01-01T00:00:00Z" | null}}.
	Timers map[string]*string `json:"timers,omitempty"`
}

// errBadAnswer is wrapped by the error of decodeAnswer.
var errBadAnswer = errors.New(`the body is not empty and not {"failed": {"<id>": "<error>", ...}, "state": {...}, "timers": {...}}`)

// decodeAnswer decodes the body of a 2xx answer. An empty body (or one of
// JSON whitespace only) returns nil, nil: every id is acknowledged.
// {"failed": {...}} returns the failed ids with their messages (an empty,
// non-nil map for {"failed": {}}). Anything else returns an error wrapping
// errBadAnswer.
//
// The body comes from the network: decodeAnswer must not panic on any
// input.
func decodeAnswer(body []byte) (map[string]string, error) {
	a, err := decodeFullAnswer(body)
	if a == nil || err != nil {
		return nil, err
	}
	if a.Failed == nil {
		return map[string]string{}, nil
	}
	return a.Failed, nil
}

// decodeFullAnswer is decodeAnswer with the state changes of a stateful
// queue's answer ("state": each value compacted, JSON null for a delete).
// nil, nil for an empty body.
func decodeFullAnswer(body []byte) (*Answer, error) {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return nil, nil
	}
	// json.Unmarshal rejects trailing data after the top-level value.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, badAnswer("not a JSON object")
	}
	for k := range top {
		switch k {
		case "failed", "state", "timers":
		case "emit":
			return nil, badAnswer(fmt.Sprintf("%q is not supported yet (only \"failed\", \"state\" and \"timers\")", k))
		default:
			return nil, badAnswer(`the object's only members may be "failed", "state" and "timers"`)
		}
	}
	if len(top) == 0 {
		return nil, badAnswer(`the object's only members may be "failed", "state" and "timers", and it has none`)
	}
	a := &Answer{}
	if raw, ok := top["failed"]; ok {
		const notStrings = `"failed" must be an object of strings`
		var messages map[string]*string
		if err := json.Unmarshal(raw, &messages); err != nil || messages == nil {
			return nil, badAnswer(notStrings)
		}
		a.Failed = make(map[string]string, len(messages))
		for id, msg := range messages {
			if msg == nil {
				return nil, badAnswer(notStrings)
			}
			a.Failed[id] = *msg
		}
	}
	if raw, ok := top["state"]; ok {
		var states map[string]json.RawMessage
		if err := json.Unmarshal(raw, &states); err != nil || states == nil {
			return nil, badAnswer(`"state" must be an object of JSON values`)
		}
		a.State = make(map[string]json.RawMessage, len(states))
		for id, v := range states {
			if v == nil {
				v = json.RawMessage("null")
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err != nil {
				return nil, badAnswer(`"state" must be an object of JSON values`)
			}
			a.State[id] = buf.Bytes()
		}
	}
	if raw, ok := top["timers"]; ok {
		const notTimes = `"timers" must be an object of RFC 3339 times or null`
		if err := json.Unmarshal(raw, &a.Timers); err != nil || a.Timers == nil {
			return nil, badAnswer(notTimes)
		}
		for _, v := range a.Timers {
			if v == nil {
				continue
			}
			if _, err := time.Parse(time.RFC3339Nano, *v); err != nil {
				return nil, badAnswer(notTimes)
			}
		}
	}
	return a, nil
}

// badAnswer returns an error wrapping errBadAnswer with the reason.
func badAnswer(reason string) error {
	return fmt.Errorf("%w: %s", errBadAnswer, reason)
}

// quoteBody returns at most maxQuotedBody bytes of body for an error,
// without trailing whitespace.
func quoteBody(body []byte) string {
	if len(body) > maxQuotedBody {
		body = trimPartialRune(body[:maxQuotedBody])
	}
	return string(bytes.TrimRight(body, jsonSpace))
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, left
// by cutting b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// applyStates hands the state changes of an answer to the batch's jobs
// (JSON null deletes); the node commits them for the ids that did not
// fail. Ids not in the batch, and every change on a queue that is not
// stateful, are ignored and logged.
func (s *sender) applyStates(b *orderly.Batch, a *Answer) {
	used, usedT := 0, 0
	for _, j := range b.Jobs {
		if !j.Stateful() {
			continue
		}
		if v, ok := a.State[j.ID]; ok {
			used++
			if string(v) == "null" {
				j.DeleteState()
			} else {
				j.SetState(v)
			}
		}
		if v, ok := a.Timers[j.ID]; ok {
			usedT++
			if v == nil {
				j.ClearTimer()
			} else {
				at, _ := time.Parse(time.RFC3339Nano, *v) // checked by decodeFullAnswer
				j.SetTimer(at)
			}
		}
	}
	if used < len(a.State) || usedT < len(a.Timers) {
		s.logger.Warn(`webhook: the receiver's "state" or "timers" names ids that are not in the batch, or the queue is not stateful (state: true); ignored`,
			"queue", b.Queue, "ignored", len(a.State)-used+len(a.Timers)-usedT)
	}
}
