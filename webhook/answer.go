package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	// Emit lists jobs to enqueue into any queue, each on behalf of an id
	// of the delivery ("from"), committed with that id's acknowledgement
	// only (docs/contract.md §11):
	// {"emit": [{"from": "<id>", "queue": "<q>", "id": "<id>", "payload": <JSON> | "payload_base64": "...", "score"?: n, "perform_in"?: seconds, "headers"?: {...}}]}.
	Emit []AnswerEmit `json:"emit,omitempty"`
}

// AnswerEmit is one element of an answer's "emit".
type AnswerEmit struct {
	From          string            `json:"from"`
	Queue         string            `json:"queue"`
	ID            string            `json:"id"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64 *string           `json:"payload_base64,omitempty"`
	Score         *float64          `json:"score,omitempty"`
	PerformIn     *float64          `json:"perform_in,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
}

// maxAnswerEmits bounds the emits of one answer (orderly.MaxEmitsPerID
// bounds those of one id).
const maxAnswerEmits = 10000

// decodeEmit checks an element of "emit" and converts it; data is the
// payload's stored bytes (a JSON payload compacted, base64 decoded).
func (e AnswerEmit) decode() (orderly.Emit, error) {
	out := orderly.Emit{Queue: e.Queue, ID: e.ID, Score: e.Score, Headers: e.Headers}
	switch {
	case e.Payload != nil && e.PayloadBase64 != nil:
		return out, errors.New(`give at most one of "payload" and "payload_base64"`)
	case e.PayloadBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*e.PayloadBase64)
		if err != nil {
			return out, fmt.Errorf("payload_base64: %w", err)
		}
		out.Payload = data
	case e.Payload != nil:
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Payload); err != nil {
			return out, fmt.Errorf("payload: %w", err)
		}
		out.Payload = buf.Bytes()
	}
	if e.PerformIn != nil {
		in := *e.PerformIn
		if math.IsNaN(in) || in < 0 || in > maxPerformIn {
			return out, fmt.Errorf("perform_in must be between 0 and %d seconds", int64(maxPerformIn))
		}
		out.PerformIn = time.Duration(in * float64(time.Second))
	}
	return out, nil
}

// maxPerformIn bounds an emit's perform_in (seconds; about 100 years).
const maxPerformIn = 100 * 365 * 24 * 3600

// errBadAnswer is wrapped by the error of decodeAnswer.
var errBadAnswer = errors.New(`the body is not empty and not {"failed": {"<id>": "<error>", ...}, "state": {...}, "timers": {...}, "emit": [...]}`)

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
		case "failed", "state", "timers", "emit":
		default:
			return nil, badAnswer(`the object's only members may be "failed", "state", "timers" and "emit"`)
		}
	}
	if len(top) == 0 {
		return nil, badAnswer(`the object's only members may be "failed", "state", "timers" and "emit", and it has none`)
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
	if raw, ok := top["emit"]; ok {
		const notEmits = `"emit" must be an array of {"from", "queue", "id", "payload"?, "payload_base64"?, "score"?, "perform_in"?, "headers"?}`
		var emits []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &emits); err != nil || emits == nil {
			return nil, badAnswer(notEmits)
		}
		if len(emits) > maxAnswerEmits {
			return nil, badAnswer(fmt.Sprintf(`"emit" holds %d jobs, over the limit of %d per answer`, len(emits), maxAnswerEmits))
		}
		a.Emit = make([]AnswerEmit, len(emits))
		for i, m := range emits {
			for k := range m {
				switch k {
				case "from", "queue", "id", "payload", "payload_base64", "score", "perform_in", "headers":
				default:
					return nil, badAnswer(fmt.Sprintf(`"emit"[%d] has an unknown member %q`, i, k))
				}
			}
			b, _ := json.Marshal(m)
			if err := json.Unmarshal(b, &a.Emit[i]); err != nil {
				return nil, badAnswer(fmt.Sprintf(`"emit"[%d]: %v`, i, err))
			}
			if a.Emit[i].From == "" {
				return nil, badAnswer(fmt.Sprintf(`"emit"[%d] needs "from": the id of the delivery it belongs to`, i))
			}
			if _, err := a.Emit[i].decode(); err != nil {
				return nil, badAnswer(fmt.Sprintf(`"emit"[%d]: %v`, i, err))
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

// checkEmits returns an error when an emit names in "from" an id that is
// not in the batch: the receiver mixed deliveries up, and the answer fails
// the request.
func checkEmits(b *orderly.Batch, a *Answer) error {
	if len(a.Emit) == 0 {
		return nil
	}
	in := make(map[string]bool, len(b.Jobs))
	for _, j := range b.Jobs {
		in[j.ID] = true
	}
	for i, e := range a.Emit {
		if !in[e.From] {
			return badAnswer(fmt.Sprintf(`"emit"[%d] names "from": %q, which is not an id of this delivery`, i, e.From))
		}
	}
	return nil
}

// applyEmits hands the emits of an answer to the batch's jobs (checked by
// checkEmits); the node commits those of the ids that did not fail.
func applyEmits(b *orderly.Batch, a *Answer) {
	if len(a.Emit) == 0 {
		return
	}
	byID := make(map[string]orderly.Job, len(b.Jobs))
	for _, j := range b.Jobs {
		byID[j.ID] = j
	}
	for _, e := range a.Emit {
		oe, _ := e.decode() // checked by decodeFullAnswer
		byID[e.From].Emit(oe)
	}
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
