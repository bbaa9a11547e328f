package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/webhook/wire"
)

const (
	// maxQuotedBody is the most of an answer's body quoted in an error.
	maxQuotedBody = 4 << 10
	// jsonSpace holds the bytes that JSON counts as whitespace.
	jsonSpace = " \t\r\n"
)

// decodeEmit checks an element of "emit" and converts it: the payload's
// stored bytes are a JSON payload compacted, or base64 decoded.
func decodeEmit(e wire.Emit) (orderly.Emit, error) {
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
		// Delay's decoding checked its range.
		out.PerformIn = time.Duration(*e.PerformIn)
	}
	if e.ExpiresIn != nil {
		out.ExpiresIn = time.Duration(*e.ExpiresIn)
	}
	return out, nil
}

// errBadAnswer is wrapped by the errors of decodeAnswer.
var errBadAnswer = errors.New(`the body is not empty and not {"failed": {"<id>": "<error>", ...}, "retry_in": {...}, "dead": {...}, "discard": {...}, "state": {...}, "timers": {...}, "emit": [...], "result": {...}}`)

// members names an answer's members, for errors.
const members = `"failed", "retry_in", "dead", "discard", "state", "timers", "emit" and "result"`

// decodeAnswer decodes the body of a 2xx answer. An empty body (or one of
// JSON whitespace only) returns nil, nil: every id is acknowledged. An
// Answer returns it, its "state" values compacted (JSON null for a
// delete), its emits checked. Anything else returns an error wrapping
// errBadAnswer.
//
// The body comes from the network: decodeAnswer must not panic on any
// input.
func decodeAnswer(body []byte) (*wire.Answer, error) {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return nil, nil
	}
	// json.Unmarshal rejects trailing data after the top-level value.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, badAnswer("not a JSON object")
	}
	return decodeMembers(top)
}

// decodeMembers decodes the members of an answer's object: see
// decodeAnswer.
func decodeMembers(top map[string]json.RawMessage) (*wire.Answer, error) {
	for k := range top {
		switch k {
		case "failed", "retry_in", "dead", "discard", "state", "timers", "emit", "result":
		default:
			return nil, badAnswer(`the object's only members may be ` + members)
		}
	}
	if len(top) == 0 {
		return nil, badAnswer(`the object's only members may be ` + members + `, and it has none`)
	}
	a := &wire.Answer{}
	for _, m := range []struct {
		name   string
		decode func(raw json.RawMessage, a *wire.Answer) error
	}{{"failed", decodeFailed}, {"retry_in", decodeRetryIn}, {"dead", decodeReasons("dead", &a.Dead)},
		{"discard", decodeReasons("discard", &a.Discard)}, {"state", decodeStates}, {"timers", decodeTimers}, {"emit", decodeEmits},
		{"result", decodeResults}} {
		if raw, ok := top[m.name]; ok {
			if err := m.decode(raw, a); err != nil {
				return nil, err
			}
		}
	}
	if err := checkExclusive(a); err != nil {
		return nil, err
	}
	return a, nil
}

// decodeRetryIn decodes an answer's "retry_in": non-negative seconds or
// duration strings (wire.Delay).
func decodeRetryIn(raw json.RawMessage, a *wire.Answer) error {
	const notDelays = `"retry_in" must be an object of non-negative seconds or duration strings such as "10m"`
	var delays map[string]json.RawMessage
	if err := json.Unmarshal(raw, &delays); err != nil || delays == nil {
		return badAnswer(notDelays)
	}
	a.RetryIn = make(map[string]wire.Delay, len(delays))
	for id, v := range delays {
		var d wire.Delay
		if v == nil || string(v) == "null" || d.UnmarshalJSON(v) != nil {
			return badAnswer(notDelays)
		}
		a.RetryIn[id] = d
	}
	return nil
}

// decodeReasons returns the decoder of "dead" or "discard": an object of
// strings (the reasons) stored into *dst.
func decodeReasons(name string, dst *map[string]string) func(json.RawMessage, *wire.Answer) error {
	return func(raw json.RawMessage, _ *wire.Answer) error {
		notStrings := fmt.Sprintf("%q must be an object of strings", name)
		var reasons map[string]*string
		if err := json.Unmarshal(raw, &reasons); err != nil || reasons == nil {
			return badAnswer(notStrings)
		}
		*dst = make(map[string]string, len(reasons))
		for id, r := range reasons {
			if r == nil {
				return badAnswer(notStrings)
			}
			(*dst)[id] = *r
		}
		return nil
	}
}

// checkExclusive refuses an answer that names one id in two of "failed",
// "retry_in", "dead" and "discard": an id has one outcome.
func checkExclusive(a *wire.Answer) error {
	seen := map[string]string{}
	check := func(name string, ids []string) error {
		for _, id := range ids {
			if other, ok := seen[id]; ok {
				return badAnswer(fmt.Sprintf("the id %q is in both %q and %q: an id has one outcome", truncateID(id), other, name))
			}
			seen[id] = name
		}
		return nil
	}
	for _, m := range []struct {
		name string
		ids  []string
	}{{"failed", keys(a.Failed)}, {"retry_in", keys(a.RetryIn)}, {"dead", keys(a.Dead)}, {"discard", keys(a.Discard)}} {
		if err := check(m.name, m.ids); err != nil {
			return err
		}
	}
	return nil
}

// keys returns the keys of m, sorted (errors name the same id each time).
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// decodeFailed decodes an answer's "failed".
func decodeFailed(raw json.RawMessage, a *wire.Answer) error {
	const notStrings = `"failed" must be an object of strings`
	var messages map[string]*string
	if err := json.Unmarshal(raw, &messages); err != nil || messages == nil {
		return badAnswer(notStrings)
	}
	a.Failed = make(map[string]string, len(messages))
	for id, msg := range messages {
		if msg == nil {
			return badAnswer(notStrings)
		}
		a.Failed[id] = *msg
	}
	return nil
}

// decodeStates decodes an answer's "state", each value compacted.
func decodeStates(raw json.RawMessage, a *wire.Answer) error {
	const notValues = `"state" must be an object of JSON values`
	var states map[string]json.RawMessage
	if err := json.Unmarshal(raw, &states); err != nil || states == nil {
		return badAnswer(notValues)
	}
	a.State = make(map[string]json.RawMessage, len(states))
	for id, v := range states {
		if v == nil {
			v = json.RawMessage("null")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return badAnswer(notValues)
		}
		a.State[id] = buf.Bytes()
	}
	return nil
}

// decodeTimers decodes an answer's "timers".
func decodeTimers(raw json.RawMessage, a *wire.Answer) error {
	const notTimes = `"timers" must be an object of RFC 3339 times or null`
	if err := json.Unmarshal(raw, &a.Timers); err != nil || a.Timers == nil {
		return badAnswer(notTimes)
	}
	for _, v := range a.Timers {
		if v == nil {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, *v); err != nil {
			return badAnswer(notTimes)
		}
	}
	return nil
}

// decodeEmits decodes an answer's "emit", refusing unknown members and
// checking each emit (decodeEmit).
func decodeEmits(raw json.RawMessage, a *wire.Answer) error {
	const notEmits = `"emit" must be an array of {"from", "queue", "id", "payload"?, "payload_base64"?, "score"?, "perform_in"?, "headers"?, "expires_in"?}`
	var emits []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &emits); err != nil || emits == nil {
		return badAnswer(notEmits)
	}
	if len(emits) > wire.MaxEmits {
		return badAnswer(fmt.Sprintf(`"emit" holds %d jobs, over the limit of %d per answer`, len(emits), wire.MaxEmits))
	}
	a.Emit = make([]wire.Emit, len(emits))
	for i, m := range emits {
		for k := range m {
			switch k {
			case "from", "queue", "id", "payload", "payload_base64", "score", "perform_in", "headers", "expires_in":
			default:
				return badAnswer(fmt.Sprintf(`"emit"[%d] has an unknown member %q`, i, k))
			}
		}
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &a.Emit[i]); err != nil {
			return badAnswer(fmt.Sprintf(`"emit"[%d]: %v`, i, err))
		}
		if a.Emit[i].From == "" {
			return badAnswer(fmt.Sprintf(`"emit"[%d] needs "from": the id of the delivery it belongs to`, i))
		}
		if _, err := decodeEmit(a.Emit[i]); err != nil {
			return badAnswer(fmt.Sprintf(`"emit"[%d]: %v`, i, err))
		}
	}
	return nil
}

// outcome turns an answer into the batch's outcome.
func (s *Sender) outcome(b *orderly.Batch, resp answerHead, body []byte) error {
	if resp.code < 200 || resp.code > 299 {
		return s.answerError(resp, body, nil)
	}
	if int64(len(body)) > s.maxBytes {
		return s.answerError(resp, body, fmt.Errorf("the body is larger than max_response_bytes (%d)", s.maxBytes))
	}
	a, err := decodeAnswer(body)
	if err != nil {
		return s.answerError(resp, body, err)
	}
	if a == nil {
		return nil
	}
	if err := checkEmits(b, a); err != nil {
		return s.answerError(resp, body, err)
	}
	if len(a.State) > 0 || len(a.Timers) > 0 {
		s.applyStates(b, a)
	}
	applyEmits(b, a)
	s.applyResults(b, a)
	return s.failIDs(b, decisions(a))
}

// decisions returns the error of each id an answer does not acknowledge:
// its failure, or the outcome it chose (orderly.Snooze, Dead, Discard).
func decisions(a *wire.Answer) map[string]error {
	out := make(map[string]error, len(a.Failed)+len(a.RetryIn)+len(a.Dead)+len(a.Discard))
	for id, msg := range a.Failed {
		out[id] = receiverError(msg)
	}
	for id, d := range a.RetryIn {
		out[id] = orderly.Snooze(time.Duration(d))
	}
	for id, r := range a.Dead {
		out[id] = orderly.Dead(reasonError(r))
	}
	for id, r := range a.Discard {
		out[id] = orderly.Discard(reasonError(r))
	}
	return out
}

// reasonError is the reason of a "dead" or "discard" entry; nil when empty
// (the node stores "dead" or "discarded").
func reasonError(r string) error {
	if r == "" {
		return nil
	}
	return errors.New(r)
}

// failIDs returns the error that fails (or chooses the outcome of) the ids
// of decided that are in b. It returns nil when no id of b is in it. The
// ids not in b are ignored, and logged in one line per answer, however
// many there are: their count and the first maxLoggedIDs of them, in order.
func (s *Sender) failIDs(b *orderly.Batch, decided map[string]error) error {
	errs := make(map[string]error)
	for _, j := range b.Jobs {
		if e, ok := decided[j.ID]; ok {
			errs[j.ID] = e
		}
	}
	if foreign := len(decided) - len(errs); foreign > 0 {
		ids := make([]string, 0, foreign)
		for id := range decided {
			if _, ok := errs[id]; !ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		shown := ids[:min(len(ids), maxLoggedIDs)]
		for i, id := range shown {
			shown[i] = truncateID(id)
		}
		s.logger.Warn("webhook: the receiver's answer names ids that are not in the batch; ignored",
			slog.String("queue", b.Queue),
			slog.String("delivery", b.Delivery),
			slog.String("url", s.safeURL),
			slog.Int("count", len(ids)),
			slog.Any("job_ids", shown))
	}
	return orderly.FailIDs(errs)
}

// maxLoggedIDs is how many of the ids not in a batch the log line of an
// answer names.
const maxLoggedIDs = 10

// maxLoggedIDBytes is how much of such an id the line shows.
const maxLoggedIDBytes = 64

// truncateID shortens an id of the receiver's for a log line.
func truncateID(id string) string {
	if len(id) <= maxLoggedIDBytes {
		return id
	}
	return string(trimPartialRune([]byte(id[:maxLoggedIDBytes]))) + "…"
}

// receiverError is the error of an id that the receiver failed with msg.
func receiverError(msg string) error {
	if msg == "" {
		return errors.New("webhook: failed by the receiver (no message)")
	}
	return errors.New(msg)
}

// answerError is the error of an answer that fails the whole batch: its
// status, why (when the status alone does not say) and the start of its
// body.
func (s *Sender) answerError(resp answerHead, body []byte, why error) error {
	msg := fmt.Sprintf("webhook: %s answered %s", s.safeURL, resp.status)
	quoted := quoteBody(body)
	switch {
	case why != nil && quoted != "":
		return fmt.Errorf("%s: %w: %s", msg, why, quoted)
	case why != nil:
		return fmt.Errorf("%s: %w", msg, why)
	case quoted != "":
		return fmt.Errorf("%s: %s", msg, quoted)
	}
	return errors.New(msg)
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
func checkEmits(b *orderly.Batch, a *wire.Answer) error {
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
func applyEmits(b *orderly.Batch, a *wire.Answer) {
	if len(a.Emit) == 0 {
		return
	}
	byID := make(map[string]orderly.Job, len(b.Jobs))
	for _, j := range b.Jobs {
		byID[j.ID] = j
	}
	for _, e := range a.Emit {
		oe, _ := decodeEmit(e) // checked by decodeAnswer
		byID[e.From].Emit(oe)
	}
}

// applyStates hands the state changes of an answer to the batch's jobs
// (JSON null deletes); the node commits them for the ids that did not
// fail. Ids not in the batch, and every change on a queue that is not
// stateful, are ignored and logged.
func (s *Sender) applyStates(b *orderly.Batch, a *wire.Answer) {
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
				at, _ := time.Parse(time.RFC3339Nano, *v) // checked by decodeAnswer
				j.SetTimer(at)
			}
		}
	}
	if used < len(a.State) || usedT < len(a.Timers) {
		s.logger.Warn(`webhook: the receiver's "state" or "timers" names ids that are not in the batch, or the queue is not stateful (state: true); ignored`,
			"queue", b.Queue, "ignored", len(a.State)-used+len(a.Timers)-usedT)
	}
}
