package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// This file checks one line of a JSONL jobs file before it is sent, as the
// node checks a job object (apiv1.DecodeJob, apiv1.NewJob.Store and
// persistence.ValidateJobs), so that a bad line is reported with its line
// number and stops the import before its batch is sent. What only the node
// knows (its payload size limit, the queue) the node checks.

// lineError is what is wrong with a line. field names the job's field at
// fault as the API does; it is empty when the line as a whole is at fault.
type lineError struct {
	field string
	msg   string
}

func (e *lineError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

// isJSONSpace reports whether c is insignificant whitespace in JSON.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// trimJSONSpace removes JSON whitespace around b.
func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// parseJobLine checks one line of a JSONL jobs file, a job object in the
// API's shape (apiv1.NewJob), and returns it without the whitespace around
// it, ready to be an element of an enqueue request; its bytes are sent as
// they are, so payloads reach the node byte for byte. now is the time
// perform_in counts from. A line that is only whitespace is not a job;
// callers skip it. Errors are *lineError.
func parseJobLine(line []byte, now time.Time) ([]byte, error) {
	lead := 0 // whitespace before the job, for byte offsets
	for lead < len(line) && isJSONSpace(line[lead]) {
		lead++
	}
	line = trimJSONSpace(line)
	if !json.Valid(line) {
		return nil, syntaxError(line, lead)
	}
	// The payload limit is the node's to check; here only what one
	// request may carry.
	if err := checkJob(line, now); err != nil {
		return nil, err
	}
	return line, nil
}

// checkJob checks a job object as the node does, but for its payload
// limit. Errors are *lineError naming the job's field at fault.
func checkJob(obj []byte, now time.Time) error {
	wire, err := apiv1.DecodeJob(obj, -1, maxBodyBytes)
	if err == nil {
		var job persistence.NewJob
		if job, err = wire.Store(now, -1); err == nil {
			err = persistence.ValidateJobs([]persistence.NewJob{job}, maxBodyBytes)
		}
	}
	if fe := (*persistence.FieldError)(nil); errors.As(err, &fe) {
		if fe.Field == "" { // not an object
			return &lineError{msg: fe.Reason + " (one job per line)"}
		}
		return &lineError{field: printable(fe.Field), msg: fe.Reason}
	}
	if err != nil {
		return &lineError{msg: err.Error()}
	}
	return nil
}

// syntaxError describes why line is not well-formed JSON; lead is the
// whitespace trimmed before it, so that the byte offset counts from the
// line's start (from 1).
func syntaxError(line []byte, lead int) error {
	if len(line) == 0 {
		return &lineError{msg: "malformed JSON: empty"}
	}
	err := json.Unmarshal(line, new(json.RawMessage))
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
		return &lineError{msg: fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset+int64(lead), se.Error())}
	}
	return &lineError{msg: fmt.Sprintf("malformed JSON: %v", err)}
}

// joinJobs makes the body of an enqueue request from checked job lines.
func joinJobs(jobs [][]byte, size int) []byte {
	b := make([]byte, 0, size+len(jobs)+2)
	b = append(b, '[')
	for i, j := range jobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, j...)
	}
	return append(b, ']')
}
