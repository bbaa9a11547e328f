package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
	// "state_base64"; null when it has none) and Version.
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

// MarshalJSON returns the body the node sends. It writes the JSON by hand:
// a JSON payload must reach the receiver byte for byte, and encoding/json
// compacts what a Marshaler returns, so json.Marshal(r) equals r's bytes
// only when every JSON payload is compact. Scores and times that are NaN or
// infinite have no JSON form and are an error.
func (r *Request) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"queue":`)
	writeString(&buf, r.Queue)
	buf.WriteString(`,"shard":`)
	buf.WriteString(strconv.Itoa(r.Shard))
	buf.WriteString(`,"jobs":[`)
	for i, j := range r.Jobs {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeJob(&buf, j); err != nil {
			return nil, err
		}
	}
	buf.WriteString(`]}`)
	return buf.Bytes(), nil
}

// writeJob writes one element of "jobs".
func writeJob(buf *bytes.Buffer, j Job) error {
	buf.WriteString(`{"id":`)
	writeString(buf, j.ID)
	buf.WriteString(`,"retry_count":`)
	buf.WriteString(strconv.Itoa(j.RetryCount))
	buf.WriteString(`,"perform_at":`)
	if err := writeNumber(buf, j.PerformAt); err != nil {
		return fmt.Errorf("webhook: job %q: perform_at: %w", j.ID, err)
	}
	if j.Error != "" {
		buf.WriteString(`,"error":`)
		writeString(buf, j.Error)
	}
	if j.Stateful {
		switch {
		case j.Version == 0:
			buf.WriteString(`,"state":null`)
		case isPortableJSON(j.State):
			buf.WriteString(`,"state":`)
			buf.Write(j.State)
		default:
			buf.WriteString(`,"state_base64":"`)
			buf.WriteString(base64.StdEncoding.EncodeToString(j.State))
			buf.WriteByte('"')
		}
		buf.WriteString(`,"version":`)
		buf.WriteString(strconv.FormatInt(j.Version, 10))
		if j.Timer {
			buf.WriteString(`,"timer":true`)
		}
	}
	buf.WriteString(`,"payloads":[`)
	for i, p := range j.Payloads {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := p.write(buf); err != nil {
			return fmt.Errorf("webhook: job %q: %w", j.ID, err)
		}
	}
	buf.WriteString(`]}`)
	return nil
}

// MarshalJSON implements json.Marshaler (see Request.MarshalJSON for why
// the node writes the bytes itself).
func (p Payload) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := p.write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write writes the payload: the data as "payload" when it is JSON that any
// receiver can parse, else as "payload_base64".
func (p Payload) write(buf *bytes.Buffer) error {
	if isPortableJSON(p.Data) {
		buf.WriteString(`{"payload":`)
		buf.Write(p.Data)
	} else {
		buf.WriteString(`{"payload_base64":"`)
		buf.WriteString(base64.StdEncoding.EncodeToString(p.Data))
		buf.WriteByte('"')
	}
	buf.WriteString(`,"score":`)
	if err := writeNumber(buf, p.Score); err != nil {
		return fmt.Errorf("score: %w", err)
	}
	if len(p.Headers) > 0 {
		b, err := json.Marshal(p.Headers) // a map of strings always marshals, keys sorted
		if err != nil {
			return fmt.Errorf("headers: %w", err)
		}
		buf.WriteString(`,"headers":`)
		buf.Write(b)
	}
	buf.WriteByte('}')
	return nil
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

// writeString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}

// writeNumber writes f as a JSON number; NaN and infinities have none.
func writeNumber(buf *bytes.Buffer, f float64) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
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
		if string(v.State) != "null" || j.Version != 0 {
			j.State = []byte(v.State)
		}
	}
	return nil
}
