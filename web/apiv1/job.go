package apiv1

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// EmptyPayload is the payload of a job that gives none: the JSON string "".
const EmptyPayload = `""`

// JobFields lists the fields of a job object, for messages.
const JobFields = "id, payload, payload_base64, score, perform_at, perform_in, headers"

// NewJob is one job of an enqueue request, POST /api/v1/queues/{q}/jobs
// (the body is a JSON array of them):
//
//	{"id": "order-1", "payload": <any JSON> | "payload_base64": "<base64>",
//	 "score": <number>, "perform_at": <unix seconds> | "perform_in": <seconds>,
//	 "headers": {"<key>": "<value>", ...}}
//
// Only id is required.
type NewJob struct {
	ID string
	// Payload holds the payload's bytes as they are stored: a "payload"
	// value in compact form, or the decoded "payload_base64". Nil means the
	// job gives none, which is stored as EmptyPayload.
	Payload []byte
	// Score orders the id's payloads; nil means now.
	Score *float64
	// PerformAt (unix seconds) or PerformIn (seconds from now), at most one;
	// neither means now.
	PerformAt, PerformIn *float64
	// Headers are the payload's string metadata (docs/contract.md §10);
	// nil or empty means none.
	Headers map[string]string
}

// MarshalJSON implements json.Marshaler: the payload goes as "payload" when
// wire.IsCompactJSON holds for its bytes (the server stores them as they
// are), else as "payload_base64", so that the stored bytes are Payload
// exactly.
func (j NewJob) MarshalJSON() ([]byte, error) {
	b := []byte(`{"id":`)
	id, err := json.Marshal(j.ID)
	if err != nil {
		return nil, err
	}
	b = append(b, id...)
	if j.Payload != nil {
		if wire.IsCompactJSON(j.Payload) {
			b = append(b, `,"payload":`...)
			b = append(b, j.Payload...)
		} else {
			b = append(b, `,"payload_base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, j.Payload)
			b = append(b, '"')
		}
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"score", j.Score}, {"perform_at", j.PerformAt}, {"perform_in", j.PerformIn}} {
		if f.v == nil {
			continue
		}
		num, err := json.Marshal(*f.v)
		if err != nil {
			return nil, fmt.Errorf("apiv1: %s: %w", f.key, err)
		}
		b = append(b, `,"`+f.key+`":`...)
		b = append(b, num...)
	}
	if len(j.Headers) > 0 {
		h, err := json.Marshal(j.Headers)
		if err != nil {
			return nil, fmt.Errorf("apiv1: headers: %w", err)
		}
		b = append(b, `,"headers":`...)
		b = append(b, h...)
	}
	return append(b, '}'), nil
}

// Fields of a job object, as bits.
const (
	fID = 1 << iota
	fPayload
	fPayloadBase64
	fScore
	fPerformAt
	fPerformIn
	fHeaders
)

// DecodeJob checks and decodes one job object of an enqueue request as the
// server does. val must be well-formed JSON (json.Valid). index is the
// job's position in its request (-1 for a job on its own), and maxPayload
// the limit of a payload's stored bytes (<= 0 means
// persistence.DefaultMaxPayloadBytes). A JSON payload is kept in compact
// form. Errors are *persistence.FieldError naming the field; Field is
// empty when val is not an object. What Store and persistence.ValidateJobs
// check (times, the id's length) is not checked.
func DecodeJob(val []byte, index, maxPayload int) (NewJob, error) {
	if maxPayload <= 0 {
		maxPayload = persistence.DefaultMaxPayloadBytes
	}
	var (
		job  NewJob
		seen int
	)
	bad := func(key, format string, args ...any) error {
		return &persistence.FieldError{Field: jsonscan.Truncate(key, 64), Index: index, Reason: fmt.Sprintf(format, args...)}
	}
	if k := jsonscan.KindOf(val); k != "an object" {
		return job, bad("", "must be a JSON object, got %s", k)
	}
	number := func(val []byte) (*float64, error) {
		v, err := jsonscan.FiniteNumber(val)
		return &v, err
	}
	err := jsonscan.EachField(val, func(key string, val []byte) error {
		var f int
		var err error
		switch key {
		case "id":
			f = fID
			job.ID, err = jsonscan.DecodeString(val)
		case "payload":
			f = fPayload
			job.Payload, err = compactPayload(val, maxPayload)
		case "payload_base64":
			f = fPayloadBase64
			job.Payload, err = decodeBase64(val, maxPayload)
		case "score":
			f = fScore
			job.Score, err = number(val)
		case "perform_at":
			f = fPerformAt
			job.PerformAt, err = number(val)
		case "perform_in":
			f = fPerformIn
			job.PerformIn, err = number(val)
		case "headers":
			f = fHeaders
			job.Headers, err = decodeHeaders(val, index)
		default:
			return bad(key, "unknown field (known: %s)", JobFields)
		}
		if seen&f != 0 {
			return bad(key, "given more than once")
		}
		seen |= f
		if err != nil {
			return bad(key, "%v", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return job, err
	case seen&fID == 0:
		return job, bad("id", "required")
	case seen&fPayload != 0 && seen&fPayloadBase64 != 0:
		return job, bad("payload_base64", "give payload or payload_base64, not both")
	}
	return job, nil
}

// Store returns the job to enqueue: the due time by persistence.PerformAt
// (now is the time perform_in counts from), and EmptyPayload for a job
// without a payload. Errors are *persistence.FieldError with Index index.
func (j NewJob) Store(now time.Time, index int) (persistence.NewJob, error) {
	at, err := persistence.PerformAt(j.PerformAt, j.PerformIn, now, index)
	if err != nil {
		return persistence.NewJob{}, err
	}
	payload := j.Payload
	if payload == nil {
		payload = []byte(EmptyPayload)
	}
	return persistence.NewJob{ID: j.ID, Payload: payload, Score: j.Score, PerformAt: at, Headers: j.Headers}, nil
}

// decodeHeaders decodes a "headers" value: an object of strings (null means
// none), within persistence.ValidateHeaders' limits.
func decodeHeaders(val []byte, index int) (map[string]string, error) {
	if k := jsonscan.KindOf(val); k == "null" {
		return nil, nil
	} else if k != "an object" {
		return nil, fmt.Errorf("must be an object of strings, got %s", k)
	}
	var h map[string]string
	if err := json.Unmarshal(val, &h); err != nil {
		return nil, fmt.Errorf("must be an object of strings")
	}
	if err := persistence.ValidateHeaders(h, index); err != nil {
		var fe *persistence.FieldError
		if errors.As(err, &fe) {
			return nil, errors.New(fe.Reason)
		}
		return nil, err
	}
	return h, nil
}

// compactPayload returns a payload value's compact encoding: insignificant
// whitespace removed, key order and escapes kept.
func compactPayload(val []byte, maxPayload int) ([]byte, error) {
	if !jsonscan.IsCompact(val) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, val); err != nil {
			return nil, err
		}
		val = buf.Bytes()
	}
	return val, checkPayloadSize(len(val), maxPayload)
}

// decodeBase64 decodes a payload_base64 value: a JSON string in standard
// base64 (with padding).
func decodeBase64(val []byte, maxPayload int) ([]byte, error) {
	str, err := jsonscan.DecodeString(val)
	if err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return nil, fmt.Errorf("not valid standard base64: %w", err)
	}
	return data, checkPayloadSize(len(data), maxPayload)
}

// checkPayloadSize rejects a payload of n stored bytes over the limit, with
// the reason persistence.ValidateJobs gives.
func checkPayloadSize(n, maxPayload int) error {
	if n > maxPayload {
		return fmt.Errorf("%d bytes, more than the limit of %d", n, maxPayload)
	}
	return nil
}
