package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/orderlyhq/orderly"
)

// Request is the JSON body of a delivery (see the package documentation):
// what the node POSTs and what a receiver written in Go decodes.
type Request struct {
	Queue string `json:"queue"`
	Shard int    `json:"shard"`
	Jobs  []Job  `json:"jobs"`
}

// Job is one job of a Request.
type Job struct {
	ID string `json:"id"`
	// RetryCount is how many times the job failed so far; -1 for a job that
	// never failed.
	RetryCount int `json:"retry_count"`
	// PerformAt is when the job was due, in unix seconds.
	PerformAt float64 `json:"perform_at"`
	// Error is the job's last error; empty (absent on the wire) when there
	// is none.
	Error string `json:"error,omitempty"`
	// Payloads are in ascending score order.
	Payloads []Payload `json:"payloads"`
	// Stateful is set for a job of a stateful queue (docs/contract.md §11):
	// the request then carries its State ("state" as a JSON value, or
	// "state_base64"; null when it has none, with "deleted": true when it
	// was deleted: Version then keeps counting) and Version. A deleted
	// state has a nil State and a Version above 0.
	Stateful bool   `json:"-"`
	State    []byte `json:"-"`
	Version  int64  `json:"version,omitempty"`
	// Timer is set when the id's timer brought it ("timer": true; the
	// job may then have no payloads).
	Timer bool `json:"timer,omitempty"`
}

// Payload is one payload of a Job: its stored bytes, its score and its
// headers. On the wire the bytes appear as "payload" when they are valid
// JSON in valid UTF-8, byte for byte, and as "payload_base64" otherwise;
// "headers" (an object of strings) only when the payload has some
// (docs/contract.md §10).
type Payload struct {
	Data    []byte
	Score   float64
	Headers map[string]string
}

// requestOf is the Request that delivers b.
func requestOf(b *orderly.Batch) *Request {
	r := &Request{Queue: b.Queue, Shard: b.Shard, Jobs: make([]Job, len(b.Jobs))}
	for i, j := range b.Jobs {
		ps := make([]Payload, len(j.Payloads))
		for k, p := range j.Payloads {
			ps[k] = Payload{Data: p.Data, Score: p.Score, Headers: p.Headers}
		}
		r.Jobs[i] = Job{ID: j.ID, RetryCount: j.RetryCount, PerformAt: unixSeconds(j.PerformAt), Error: j.Error, Payloads: ps}
		if j.Stateful() {
			r.Jobs[i].Stateful, r.Jobs[i].State, r.Jobs[i].Version = true, j.State(), j.StateVersion()
			r.Jobs[i].Timer = j.Timer()
		}
	}
	return r
}

// appendBatch appends the body that delivers b to dst: the bytes
// Request.MarshalJSON writes for the Request of b, built from b directly.
func appendBatch(dst []byte, b *orderly.Batch) ([]byte, error) {
	dst = append(dst, `{"queue":`...)
	dst = appendString(dst, b.Queue)
	dst = append(dst, `,"shard":`...)
	dst = strconv.AppendInt(dst, int64(b.Shard), 10)
	dst = append(dst, `,"jobs":[`...)
	for i, j := range b.Jobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		job := Job{ID: j.ID, RetryCount: j.RetryCount, PerformAt: unixSeconds(j.PerformAt), Error: j.Error}
		if j.Stateful() {
			job.Stateful, job.State, job.Version, job.Timer = true, j.State(), j.StateVersion(), j.Timer()
		}
		var err error
		if dst, err = appendJobHead(dst, &job); err != nil {
			return nil, err
		}
		for k, p := range j.Payloads {
			if k > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendPayload(dst, p.Data, p.Score, p.Headers); err != nil {
				return nil, fmt.Errorf("webhook: job %q: %w", j.ID, err)
			}
		}
		dst = append(dst, `]}`...)
	}
	return append(dst, `]}`...), nil
}

// batchSize estimates the length of the body that delivers b, so that it
// is built in one allocation.
func batchSize(b *orderly.Batch) int {
	n := 64 + len(b.Queue)
	for _, j := range b.Jobs {
		n += 96 + len(j.ID) + len(j.Error)
		for _, p := range j.Payloads {
			n += 48 + len(p.Data)*4/3
			for k, v := range p.Headers {
				n += 8 + len(k) + len(v)
			}
		}
	}
	return n
}

// MarshalJSON returns the body the node sends. It writes the JSON by hand:
// a JSON payload must reach the receiver byte for byte, and encoding/json
// compacts what a Marshaler returns, so json.Marshal(r) equals r's bytes
// only when every JSON payload is compact. Scores and times that are NaN or
// infinite have no JSON form and are an error.
func (r *Request) MarshalJSON() ([]byte, error) {
	dst := make([]byte, 0, 256)
	dst = append(dst, `{"queue":`...)
	dst = appendString(dst, r.Queue)
	dst = append(dst, `,"shard":`...)
	dst = strconv.AppendInt(dst, int64(r.Shard), 10)
	dst = append(dst, `,"jobs":[`...)
	for i := range r.Jobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendJob(dst, &r.Jobs[i]); err != nil {
			return nil, err
		}
	}
	return append(dst, `]}`...), nil
}

// appendJob appends one element of "jobs".
func appendJob(dst []byte, j *Job) ([]byte, error) {
	dst, err := appendJobHead(dst, j)
	if err != nil {
		return nil, err
	}
	for i, p := range j.Payloads {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendPayload(dst, p.Data, p.Score, p.Headers); err != nil {
			return nil, fmt.Errorf("webhook: job %q: %w", j.ID, err)
		}
	}
	return append(dst, `]}`...), nil
}

// appendJobHead appends an element of "jobs" up to the opening bracket of
// its "payloads" (j.Payloads is not read).
func appendJobHead(dst []byte, j *Job) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, j.ID)
	dst = append(dst, `,"retry_count":`...)
	dst = strconv.AppendInt(dst, int64(j.RetryCount), 10)
	dst = append(dst, `,"perform_at":`...)
	dst, err := appendNumber(dst, j.PerformAt)
	if err != nil {
		return nil, fmt.Errorf("webhook: job %q: perform_at: %w", j.ID, err)
	}
	if j.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, j.Error)
	}
	if j.Stateful {
		switch {
		case j.Version == 0:
			dst = append(dst, `,"state":null`...)
		case j.State == nil:
			dst = append(dst, `,"state":null,"deleted":true`...)
		case isPortableJSON(j.State):
			dst = append(dst, `,"state":`...)
			dst = append(dst, j.State...)
		default:
			dst = append(dst, `,"state_base64":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, j.State)
			dst = append(dst, '"')
		}
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, j.Version, 10)
		if j.Timer {
			dst = append(dst, `,"timer":true`...)
		}
	}
	return append(dst, `,"payloads":[`...), nil
}

// MarshalJSON implements json.Marshaler (see Request.MarshalJSON for why
// the node writes the bytes itself).
func (p Payload) MarshalJSON() ([]byte, error) {
	return appendPayload(nil, p.Data, p.Score, p.Headers)
}

// appendPayload appends a payload: the data as "payload" when it is JSON
// that any receiver can parse, else as "payload_base64".
func appendPayload(dst, data []byte, score float64, headers map[string]string) ([]byte, error) {
	if isPortableJSON(data) {
		dst = append(dst, `{"payload":`...)
		dst = append(dst, data...)
	} else {
		dst = append(dst, `{"payload_base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, data)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"score":`...)
	dst, err := appendNumber(dst, score)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	if len(headers) > 0 {
		b, err := json.Marshal(headers) // a map of strings always marshals, keys sorted
		if err != nil {
			return nil, fmt.Errorf("headers: %w", err)
		}
		dst = append(dst, `,"headers":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler: Data is the value of "payload"
// as it appears in the body (without the whitespace around it), or the
// decoded "payload_base64". Exactly one of the two must be given.
func (p *Payload) UnmarshalJSON(b []byte) error {
	var v struct {
		Payload       json.RawMessage   `json:"payload"`
		PayloadBase64 *string           `json:"payload_base64"`
		Score         float64           `json:"score"`
		Headers       map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Headers = v.Headers
	switch {
	case v.Payload != nil && v.PayloadBase64 != nil:
		return errors.New("webhook: payload and payload_base64 both given")
	case v.Payload != nil:
		p.Data = []byte(v.Payload)
	case v.PayloadBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.PayloadBase64)
		if err != nil {
			return fmt.Errorf("webhook: payload_base64: %w", err)
		}
		p.Data = data
	default:
		return errors.New("webhook: payload or payload_base64 required")
	}
	p.Score = v.Score
	return nil
}

// isPortableJSON reports whether data can be embedded as a JSON value:
// valid JSON (which excludes empty data) in valid UTF-8. json.Valid alone
// accepts invalid UTF-8 inside strings, which RFC 8259 parsers may reject.
func isPortableJSON(data []byte) bool {
	return json.Valid(data) && utf8.Valid(data)
}

// appendString appends s as encoding/json writes it: a JSON string, with
// <, > and & escaped and invalid UTF-8 as U+FFFD. Plain ASCII, the common
// case, is copied as is; anything else goes through encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendNumber appends f as encoding/json writes it; NaN and infinities
// have no JSON form and are an error. The numbers that encoding/json
// writes without an exponent are formatted here alike; the others go
// through encoding/json.
func appendNumber(dst []byte, f float64) ([]byte, error) {
	if abs := math.Abs(f); abs == 0 || (abs >= 1e-6 && abs < 1e21) {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// unixSeconds converts t to float unix seconds; the zero time is 0. Adding
// the fraction to the whole seconds keeps more precision than dividing
// t.UnixNano().
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// UnmarshalJSON implements json.Unmarshaler; it reads what the node sends,
// including the state of a stateful queue's job ("state" or
// "state_base64", and "version"), so that a receiver written in Go sees it.
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	var v struct {
		plain
		State       json.RawMessage `json:"state"`
		StateBase64 *string         `json:"state_base64"`
		Deleted     bool            `json:"deleted"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*j = Job(v.plain)
	switch {
	case v.StateBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.StateBase64)
		if err != nil {
			return fmt.Errorf("webhook: state_base64: %w", err)
		}
		j.Stateful, j.State = true, data
	case v.State != nil:
		j.Stateful = true
		if string(v.State) != "null" || (j.Version != 0 && !v.Deleted) {
			j.State = []byte(v.State)
		}
	}
	return nil
}
