package wire

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
)

// Limits of an answer.
const (
	// MaxEmits bounds the emits of one answer; an answer with more fails
	// the request.
	MaxEmits = 10000
	// MaxPerformIn bounds an emit's perform_in, in seconds (about 100
	// years).
	MaxPerformIn = 100 * 365 * 24 * 3600
)

// Answer is the body of a 2xx answer that does more than acknowledge
// every id (see "The answer" in the package documentation). The ids it
// does not fail are acknowledged; a 2xx answer with an empty body
// acknowledges every id.
type Answer struct {
	// Failed fails these ids with these messages:
	// {"failed": {"<id>": "<error>", ...}}.
	Failed map[string]string `json:"failed,omitempty"`
	// State sets (a JSON value) or deletes (null) the state of ids of a
	// stateful queue's delivery: {"state": {"<id>": <JSON value> | null}},
	// committed only for the ids that did not fail (docs/contract.md §11).
	State map[string]json.RawMessage `json:"state,omitempty"`
	// Timers sets ("<RFC 3339>") or clears (null) the one timer of ids of
	// the delivery: {"timers": {"<id>": "2026-01-01T00:00:00Z" | null}}.
	Timers map[string]*string `json:"timers,omitempty"`
	// Emit lists jobs to enqueue into any queue, each on behalf of an id
	// of the delivery (From), committed with that id's acknowledgement
	// only (docs/contract.md §11).
	Emit []Emit `json:"emit,omitempty"`
	// RetryIn snoozes these ids (docs/contract.md §3.11): the payloads of
	// the delivery go back to the queue due after the delay, their retry
	// count and last error unchanged; no failure is counted:
	// {"retry_in": {"<id>": seconds | "10m"}}.
	RetryIn map[string]Delay `json:"retry_in,omitempty"`
	// Dead sends the payloads of the delivery of these ids to the morgue
	// now, with the reason as their error, whatever retries were left:
	// {"dead": {"<id>": "<reason>"}}.
	Dead map[string]string `json:"dead,omitempty"`
	// Discard drops the payloads of the delivery of these ids, counted and
	// never delivered again: {"discard": {"<id>": "<reason>"}}.
	Discard map[string]string `json:"discard,omitempty"`
	// Result sets the result of ids of the delivery, any JSON value each:
	// {"result": {"<id>": <JSON value>}}, kept (compacted) in the id's
	// finished record when the id is acknowledged on a queue with
	// retain_finished, and dropped otherwise (docs/contract.md §3.14). A
	// result over 64 KiB fails its id.
	Result map[string]json.RawMessage `json:"result,omitempty"`
}

// Delay is a delay of an answer's "retry_in". It is written as a JSON
// number of seconds; it reads a number of seconds (fractions allowed) or
// a Go duration string such as "10m" or "1.5s". A negative delay, or one
// over MaxPerformIn seconds, is refused.
type Delay time.Duration

// errBadDelay is the error of a delay that is not a non-negative number of
// seconds or duration string.
var errBadDelay = errors.New("a delay must be a non-negative number of seconds or a duration string such as \"10m\", at most MaxPerformIn seconds")

// MarshalJSON writes the delay as a number of seconds.
func (d Delay) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of seconds or a duration string.
func (d *Delay) UnmarshalJSON(b []byte) error {
	var secs float64
	if len(b) > 0 && b[0] == '"' {
		var text string
		if err := json.Unmarshal(b, &text); err != nil {
			return errBadDelay
		}
		v, err := time.ParseDuration(text)
		if err != nil {
			return errBadDelay
		}
		secs = v.Seconds()
	} else if err := json.Unmarshal(b, &secs); err != nil {
		return errBadDelay
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || secs > MaxPerformIn {
		return errBadDelay
	}
	*d = Delay(time.Duration(secs * float64(time.Second)))
	return nil
}

// Emit is one element of an answer's "emit":
//
//	{"from": "<id>", "queue": "<q>", "id": "<id>", "payload": <JSON> | "payload_base64": "...",
//	 "score"?: n, "perform_in"?: seconds | "<duration>", "headers"?: {...},
//	 "expires_in"?: seconds | "<duration>"}
type Emit struct {
	// From is the id of the delivery the emit belongs to. Required.
	From  string `json:"from"`
	Queue string `json:"queue"`
	ID    string `json:"id"`
	// Payload is a JSON value, stored compact; PayloadBase64 holds bytes
	// instead. At most one; with neither the payload is empty.
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadBase64 *string         `json:"payload_base64,omitempty"`
	// Score orders the id's payloads; nil means now.
	Score *float64 `json:"score,omitempty"`
	// PerformIn delays the job (0 to MaxPerformIn seconds): written as a
	// number of seconds, read from a number of seconds or a duration
	// string such as "90s", as everywhere perform_in is; nil means now.
	PerformIn *Delay            `json:"perform_in,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// ExpiresIn makes the emitted payload expire that long after the call
	// (docs/contract.md §3.15), read as PerformIn is; nil means never.
	ExpiresIn *Delay `json:"expires_in,omitempty"`
}
