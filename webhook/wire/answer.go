package wire

import "encoding/json"

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
	// Result sets the result of ids of the delivery, any JSON value each:
	// {"result": {"<id>": <JSON value>}}, kept (compacted) in the id's
	// finished record when the id is acknowledged on a queue with
	// retain_finished, and dropped otherwise (docs/contract.md §3.11). A
	// result over 64 KiB fails its id.
	Result map[string]json.RawMessage `json:"result,omitempty"`
}

// Emit is one element of an answer's "emit":
//
//	{"from": "<id>", "queue": "<q>", "id": "<id>", "payload": <JSON> | "payload_base64": "...",
//	 "score"?: n, "perform_in"?: seconds, "headers"?: {...}}
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
	// PerformIn delays the job, in seconds (0 to MaxPerformIn); nil means
	// now.
	PerformIn *float64          `json:"perform_in,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}
