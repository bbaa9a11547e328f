package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
	// the request then carries its State ("state" by the payload rule, or
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

// MarshalJSON returns the body the node sends. It writes the JSON itself,
// in one buffer: payloads go by the payload rule (IsCompactJSON), strings
// and numbers as encoding/json writes them. Scores and times that are NaN
// or infinite have no JSON form and are an error.
func (r Request) MarshalJSON() ([]byte, error) {
	dst := make([]byte, 0, 64+len(r.Queue)+jobsSize(r.Jobs))
	dst = append(dst, `{"queue":`...)
	dst = appendString(dst, r.Queue)
	dst = append(dst, `,"shard":`...)
	dst = strconv.AppendInt(dst, int64(r.Shard), 10)
	dst = append(dst, `,"jobs":`...)
	dst, err := appendJobs(dst, r.Jobs)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// AppendJobs appends jobs to dst as the JSON array Request.MarshalJSON
// writes for them ("[]" when there are none), growing dst at most once:
// what a pull lease's answer carries, written in the answer's own buffer.
// Scores and times that are NaN or infinite are an error.
func AppendJobs(dst []byte, jobs []Job) ([]byte, error) {
	return appendJobs(slices.Grow(dst, jobsSize(jobs)), jobs)
}

// jobsSize estimates the length of jobs' JSON array.
func jobsSize(jobs []Job) int {
	n := 2
	for i := range jobs {
		n += jobs[i].size() + 1
	}
	return n
}

// appendJobs appends jobs' JSON array to dst.
func appendJobs(dst []byte, jobs []Job) ([]byte, error) {
	dst = append(dst, '[')
	for i := range jobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = jobs[i].appendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// MarshalJSON implements json.Marshaler, writing what Request.MarshalJSON
// writes for a job.
func (j Job) MarshalJSON() ([]byte, error) {
	return j.appendJSON(make([]byte, 0, j.size()))
}

// size estimates the length of j's JSON.
func (j *Job) size() int {
	n := 96 + len(j.ID) + len(j.Error) + len(j.State)*4/3
	for i := range j.Payloads {
		n += j.Payloads[i].size()
	}
	return n
}

// appendJSON appends j's JSON to dst.
func (j *Job) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, j.ID)
	dst = append(dst, `,"retry_count":`...)
	dst = strconv.AppendInt(dst, int64(j.RetryCount), 10)
	dst = append(dst, `,"perform_at":`...)
	dst, err := appendNumber(dst, j.PerformAt)
	if err != nil {
		return nil, fmt.Errorf("wire: job %q: perform_at: %w", j.ID, err)
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
		default:
			dst = append(dst, ',')
			dst = appendBytes(dst, "state", j.State)
		}
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, j.Version, 10)
		if j.Timer {
			dst = append(dst, `,"timer":true`...)
		}
	}
	dst = append(dst, `,"payloads":[`...)
	for i := range j.Payloads {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = j.Payloads[i].appendJSON(dst); err != nil {
			return nil, fmt.Errorf("wire: job %q: %w", j.ID, err)
		}
	}
	return append(dst, `]}`...), nil
}

// jobJSON is a job as encoding/json decodes it.
type jobJSON struct {
	ID          string          `json:"id"`
	RetryCount  int             `json:"retry_count"`
	PerformAt   float64         `json:"perform_at"`
	Error       string          `json:"error"`
	Payloads    []payloadJSON   `json:"payloads"`
	State       json.RawMessage `json:"state"`
	StateBase64 *string         `json:"state_base64"`
	Deleted     bool            `json:"deleted"`
	Version     int64           `json:"version"`
	Timer       bool            `json:"timer"`
}

// UnmarshalJSON implements json.Unmarshaler: it reads what the node sends,
// including the state of a stateful queue's job ("state" or
// "state_base64", and "version"). It decodes the body in one pass of
// encoding/json (case-insensitive names, unknown members ignored, as
// encoding/json decodes a struct) and replaces *r.
func (r *Request) UnmarshalJSON(b []byte) error {
	var v struct {
		Queue string    `json:"queue"`
		Shard int       `json:"shard"`
		Jobs  []jobJSON `json:"jobs"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	out := Request{Queue: v.Queue, Shard: v.Shard}
	if v.Jobs != nil {
		out.Jobs = make([]Job, len(v.Jobs))
		count := 0
		for i := range v.Jobs {
			count += len(v.Jobs[i].Payloads)
		}
		payloads := make([]Payload, count) // one allocation for every job's
		for i := range v.Jobs {
			n := len(v.Jobs[i].Payloads)
			if err := v.Jobs[i].job(&out.Jobs[i], payloads[:n:n]); err != nil {
				return fmt.Errorf("wire: jobs[%d]: %w", i, err)
			}
			payloads = payloads[n:]
		}
	}
	*r = out
	return nil
}

// UnmarshalJSON implements json.Unmarshaler, as Request.UnmarshalJSON
// decodes a job.
func (j *Job) UnmarshalJSON(b []byte) error {
	var v jobJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var out Job
	if err := v.job(&out, make([]Payload, len(v.Payloads))); err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	*j = out
	return nil
}

// job converts a decoded job into out, whose payloads go into payloads
// (of the length of v's).
func (v *jobJSON) job(out *Job, payloads []Payload) error {
	*out = Job{ID: v.ID, RetryCount: v.RetryCount, PerformAt: v.PerformAt, Error: v.Error, Version: v.Version, Timer: v.Timer}
	if v.Payloads != nil {
		out.Payloads = payloads
		for i := range v.Payloads {
			p, err := v.Payloads[i].payload()
			if err != nil {
				return fmt.Errorf("payloads[%d]: %w", i, err)
			}
			payloads[i] = p
		}
	}
	switch {
	case v.StateBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.StateBase64)
		if err != nil {
			return fmt.Errorf("state_base64: %w", err)
		}
		out.Stateful, out.State = true, data
	case v.State != nil:
		out.Stateful = true
		if string(v.State) != "null" || (v.Version != 0 && !v.Deleted) {
			out.State = compact(v.State)
		}
	}
	return nil
}
