package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/orderlyhq/orderly/persistence"
)

// This file checks one line of a JSONL jobs file before it is sent: the
// checks the node would make on the job that need no clock and no
// configuration, so that a bad line is reported with its line number and
// stops the import before its batch is sent. What only the node knows (the
// payload size limit, the queue) it checks itself.

// maxTimeSeconds is the latest perform_at the node accepts, in unix seconds.
const maxTimeSeconds = 1 << 34

// Fields of a job line, as bits of a set.
const (
	fieldID = 1 << iota
	fieldPayload
	fieldPayloadBase64
	fieldScore
	fieldPerformAt
	fieldPerformIn
)

// jobFields are the fields of the API's job object.
var jobFields = map[string]int{
	"id":             fieldID,
	"payload":        fieldPayload,
	"payload_base64": fieldPayloadBase64,
	"score":          fieldScore,
	"perform_at":     fieldPerformAt,
	"perform_in":     fieldPerformIn,
}

const knownFields = "id, payload, payload_base64, score, perform_at, perform_in"

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
// API's shape:
//
//	{"id": "order-1", "payload": <any JSON> | "payload_base64": "<base64>",
//	 "score": <number>, "perform_at": <unix seconds> | "perform_in": <seconds>}
//
// and returns it without the whitespace around it, ready to be an element
// of an enqueue request; its bytes are sent as they are, so payloads reach
// the node byte for byte. The checks are the node's: well-formed JSON, an
// object, known fields given once, an id that is a non-empty string of
// valid UTF-8 (no unpaired surrogate escapes) of at most 512 bytes, numbers
// that are finite, times in range, valid base64, and neither payload with
// payload_base64 nor perform_at with perform_in. A line that is only
// whitespace is not a job; callers skip it. Errors are *lineError.
func parseJobLine(line []byte) ([]byte, error) {
	lead := 0 // whitespace before the job, for byte offsets
	for lead < len(line) && isJSONSpace(line[lead]) {
		lead++
	}
	line = trimJSONSpace(line)
	if !json.Valid(line) {
		return nil, syntaxError(line, lead)
	}
	if line[0] != '{' {
		return nil, &lineError{msg: "must be a JSON object (one job per line), got " + kindOf(line)}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, &lineError{msg: err.Error()}
	}
	var seen int
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &lineError{msg: err.Error()}
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, &lineError{msg: err.Error()}
		}
		f := jobFields[key]
		switch {
		case f == 0:
			return nil, &lineError{field: printable(truncate(key, 64)), msg: "unknown field (known: " + knownFields + ")"}
		case seen&f != 0:
			return nil, &lineError{field: key, msg: "given more than once"}
		}
		seen |= f
		if err := checkField(f, val); err != nil {
			return nil, &lineError{field: key, msg: err.Error()}
		}
	}
	switch {
	case seen&fieldID == 0:
		return nil, &lineError{field: "id", msg: "required"}
	case seen&fieldPayload != 0 && seen&fieldPayloadBase64 != 0:
		return nil, &lineError{field: "payload_base64", msg: "give payload or payload_base64, not both"}
	case seen&fieldPerformAt != 0 && seen&fieldPerformIn != 0:
		return nil, &lineError{field: "perform_in", msg: "give perform_at or perform_in, not both"}
	}
	return line, nil
}

// checkField checks the value of one field of a job line.
func checkField(f int, val []byte) error {
	switch f {
	case fieldID:
		id, err := strictString(val)
		if err != nil {
			return err
		}
		if err := persistence.ValidateID(id, -1); err != nil {
			if fe := (*persistence.FieldError)(nil); errors.As(err, &fe) {
				return errors.New(fe.Reason)
			}
			return err
		}
	case fieldPayloadBase64:
		s, err := strictString(val)
		if err != nil {
			return err
		}
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return fmt.Errorf("not valid standard base64: %w", err)
		}
	case fieldScore:
		_, err := finiteNumber(val)
		return err
	case fieldPerformAt:
		at, err := finiteNumber(val)
		if err == nil && (at < 0 || at > maxTimeSeconds) {
			err = fmt.Errorf("out of range: must be unix seconds between 0 and %d", int64(maxTimeSeconds))
		}
		return err
	case fieldPerformIn:
		in, err := finiteNumber(val)
		switch {
		case err != nil:
			return err
		case in < 0:
			return errors.New("must not be negative")
		case in > maxTimeSeconds:
			return fmt.Errorf("out of range: the time would be after unix second %d", int64(maxTimeSeconds))
		}
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

// kindOf names the kind of a well-formed JSON value, with its article.
func kindOf(val []byte) string {
	if len(val) == 0 {
		return "nothing"
	}
	switch val[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// strictString decodes a JSON string literal that must survive decoding
// unchanged: encoding/json silently replaces invalid UTF-8 and unpaired
// surrogate escapes with U+FFFD, which would turn an id into another one.
func strictString(val []byte) (string, error) {
	if k := kindOf(val); k != "a string" {
		return "", fmt.Errorf("must be a string, got %s", k)
	}
	if !utf8.Valid(val) || !pairedSurrogates(val) {
		return "", errors.New("not valid UTF-8 (invalid bytes or an unpaired surrogate escape)")
	}
	if bytes.IndexByte(val, '\\') < 0 {
		return string(val[1 : len(val)-1]), nil
	}
	var s string
	if err := json.Unmarshal(val, &s); err != nil {
		return "", err
	}
	return s, nil
}

// pairedSurrogates reports whether every surrogate \u escape of a
// well-formed JSON string literal is a high one followed by a low one.
func pairedSurrogates(lit []byte) bool {
	hex := func(i int) rune {
		if i+4 > len(lit) {
			return -1
		}
		v, err := strconv.ParseUint(string(lit[i:i+4]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(v)
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if i++; i >= len(lit) || lit[i] != 'u' {
			continue // another escape: its character is skipped
		}
		r := hex(i + 1)
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 || i+2 >= len(lit) || lit[i+1] != '\\' || lit[i+2] != 'u' {
			return false
		}
		if low := hex(i + 3); low < 0xDC00 || low > 0xDFFF {
			return false
		}
		i += 6
	}
	return true
}

// finiteNumber decodes a JSON number that must be finite as a float64.
func finiteNumber(val []byte) (float64, error) {
	if k := kindOf(val); k != "a number" {
		return 0, fmt.Errorf("must be a number, got %s", k)
	}
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("must be a finite number (%s does not fit a float64)", truncate(string(val), 32))
	}
	return f, nil
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
