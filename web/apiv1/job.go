package apiv1

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// EmptyPayload is the payload of a job that gives none: the JSON string "".
const EmptyPayload = `""`

// DeadlineHeader is the optional request header of an enqueue (POST
// /api/v1/queues/{q}/jobs) that bounds when the node may still store it:
// an RFC 3339 time, such as "2026-11-28T10:00:00.250Z" (wire.DeadlineFormat
// writes one). When the node would store the jobs at or after it, on its
// own clock, it answers 408 and stores nothing, so that a request held up
// (a node paused or overloaded) is not applied after its producer gave up.
// It is the header, and the format, of a webhook request's deadline
// (wire.DeadlineHeader).
const DeadlineHeader = wire.DeadlineHeader

// JobFields lists the fields of a job object, for messages.
const JobFields = "id, payload, payload_base64, score, perform_at, perform_in, headers, dedup_key, expires_at, expires_in, priority"

// NewJob is one job of an enqueue request, POST /api/v1/queues/{q}/jobs
// (the body is a JSON array of them):
//
//	{"id": "order-1", "payload": <any JSON> | "payload_base64": "<base64>",
//	 "score": <number>, "perform_at": <unix seconds> | "perform_in": <seconds> | "<duration>",
//	 "headers": {"<key>": "<value>", ...}, "dedup_key": "<string>",
//	 "expires_at": <unix seconds> | "expires_in": <seconds> | "<duration>", "priority": 1..4}
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
	// neither means now. A "perform_in" string is a Go duration ("90s"),
	// read as its seconds.
	PerformAt, PerformIn *float64
	// Headers are the payload's string metadata (docs/contract.md §10);
	// nil or empty means none.
	Headers map[string]string
	// DedupKey makes the job a duplicate, acknowledged and not stored, when
	// a job of the same id with the same key was enqueued within the
	// queue's dedup window (docs/contract.md §3.12); empty means none.
	DedupKey string
	// ExpiresAt (unix seconds) or ExpiresIn (seconds from now), at most
	// one; neither means the payload never expires (docs/contract.md
	// §3.15). An "expires_in" string is a Go duration, as for perform_in.
	ExpiresAt, ExpiresIn *float64
	// Priority orders the due ids of a shard, 1 (first) to 4
	// (docs/contract.md §3.16); 0 means none given (1).
	Priority int
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
	}{{"score", j.Score}, {"perform_at", j.PerformAt}, {"perform_in", j.PerformIn},
		{"expires_at", j.ExpiresAt}, {"expires_in", j.ExpiresIn}} {
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
	if j.DedupKey != "" {
		k, err := json.Marshal(j.DedupKey)
		if err != nil {
			return nil, fmt.Errorf("apiv1: dedup_key: %w", err)
		}
		b = append(b, `,"dedup_key":`...)
		b = append(b, k...)
	}
	if j.Priority != 0 {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(j.Priority), 10)
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
	fDedupKey
	fExpiresAt
	fExpiresIn
	fPriority
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
	d := newJobDecoder(index, maxPayload)
	if k := jsonscan.KindOf(val); k != "an object" {
		return d.job, d.bad("", "must be a JSON object, got %s", k)
	}
	if err := jsonscan.EachField(val, d.field); err != nil {
		return d.job, err
	}
	return d.done()
}

// ErrMalformedJSON is wrapped by the error of DecodeJobs for a body that is
// not well-formed JSON; the caller says where (json.Unmarshal's
// *json.SyntaxError does).
var ErrMalformedJSON = errors.New("apiv1: malformed JSON")

// DecodeJobs checks and decodes an enqueue body, a JSON array of job
// objects (its first byte that is not white space is '['), into the jobs
// to store, as DecodeJob and NewJob.Store do each job: now is the time
// perform_in counts from. It reads the body once, checking its syntax as
// it goes: a body that is not well-formed JSON returns an error wrapping
// ErrMalformedJSON, whatever else is wrong with it; else the first job's
// error (a *persistence.FieldError) is returned.
func DecodeJobs(body []byte, maxPayload int, now time.Time) ([]persistence.NewJob, error) {
	var jobs []persistence.NewJob
	d := newJobDecoder(0, maxPayload)
	field := d.field
	err := jsonscan.WalkArray(body, func(i int, e *jsonscan.Element) error {
		*d = jobDecoder{index: i, maxPayload: d.maxPayload}
		if k := e.Kind(); k != "an object" {
			return d.bad("", "must be a JSON object, got %s", k)
		}
		if err := e.EachField(field); err != nil {
			return err
		}
		wire, err := d.done()
		if err != nil {
			return err
		}
		job, err := wire.Store(now, i)
		jobs = append(jobs, job)
		return err
	})
	if errors.Is(err, jsonscan.ErrMalformed) {
		return nil, fmt.Errorf("%w: %w", ErrMalformedJSON, err)
	}
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// jobDecoder decodes the fields of one job object.
type jobDecoder struct {
	job        NewJob
	seen       int // the fields given, as bits
	index      int
	maxPayload int
}

func newJobDecoder(index, maxPayload int) *jobDecoder {
	if maxPayload <= 0 {
		maxPayload = persistence.DefaultMaxPayloadBytes
	}
	return &jobDecoder{index: index, maxPayload: maxPayload}
}

// bad returns the error of the field key.
func (d *jobDecoder) bad(key, format string, args ...any) error {
	return &persistence.FieldError{Field: jsonscan.Truncate(key, 64), Index: d.index, Reason: fmt.Sprintf(format, args...)}
}

// field decodes one field.
func (d *jobDecoder) field(key, val []byte) error {
	number := func(val []byte) (*float64, error) {
		v, err := jsonscan.FiniteNumber(val)
		return &v, err
	}
	var f int
	var err error
	switch string(key) {
	case "id":
		f = fID
		d.job.ID, err = jsonscan.DecodeString(val)
	case "payload":
		f = fPayload
		d.job.Payload, err = compactPayload(val, d.maxPayload)
	case "payload_base64":
		f = fPayloadBase64
		d.job.Payload, err = decodeBase64(val, d.maxPayload)
	case "score":
		f = fScore
		d.job.Score, err = number(val)
	case "perform_at":
		f = fPerformAt
		d.job.PerformAt, err = number(val)
	case "perform_in":
		f = fPerformIn
		d.job.PerformIn, err = seconds(val)
	case "headers":
		f = fHeaders
		d.job.Headers, err = decodeHeaders(val, d.index)
	case "dedup_key":
		f = fDedupKey
		d.job.DedupKey, err = decodeDedupKey(val, d.index)
	case "expires_at":
		f = fExpiresAt
		d.job.ExpiresAt, err = number(val)
	case "expires_in":
		f = fExpiresIn
		d.job.ExpiresIn, err = seconds(val)
	case "priority":
		f = fPriority
		d.job.Priority, err = decodePriority(val)
	default:
		return d.bad(string(key), "unknown field (known: %s)", JobFields)
	}
	if d.seen&f != 0 {
		return d.bad(string(key), "given more than once")
	}
	d.seen |= f
	if err != nil {
		return d.bad(string(key), "%v", err)
	}
	return nil
}

// done checks what the fields say together, once all were decoded.
func (d *jobDecoder) done() (NewJob, error) {
	switch {
	case d.seen&fID == 0:
		return d.job, d.bad("id", "required")
	case d.seen&fPayload != 0 && d.seen&fPayloadBase64 != 0:
		return d.job, d.bad("payload_base64", "give payload or payload_base64, not both")
	}
	return d.job, nil
}

// Store returns the job to enqueue: the due time by persistence.PerformAt
// and the expiry by persistence.ExpiresAt (now is the time perform_in and
// expires_in count from), and EmptyPayload for a job without a payload.
// Errors are *persistence.FieldError with Index index.
func (j NewJob) Store(now time.Time, index int) (persistence.NewJob, error) {
	at, err := persistence.PerformAt(j.PerformAt, j.PerformIn, now, index)
	if err != nil {
		return persistence.NewJob{}, err
	}
	exp, err := persistence.ExpiresAt(j.ExpiresAt, j.ExpiresIn, now, index)
	if err != nil {
		return persistence.NewJob{}, err
	}
	payload := j.Payload
	if payload == nil {
		payload = []byte(EmptyPayload)
	}
	return persistence.NewJob{ID: j.ID, Payload: payload, Score: j.Score, PerformAt: at, Headers: j.Headers, DedupKey: j.DedupKey,
		ExpiresAt: exp, Priority: j.Priority}, nil
}

// decodePriority decodes a "priority" value: an integer from 1 to
// persistence.MaxPriority (null means none: 1).
func decodePriority(val []byte) (int, error) {
	switch k := jsonscan.KindOf(val); k {
	case "null":
		return 0, nil
	case "a number":
	default:
		return 0, fmt.Errorf("must be an integer from 1 to %d, got %s", persistence.MaxPriority, k)
	}
	v, err := jsonscan.FiniteNumber(val)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || v < 1 || v > persistence.MaxPriority {
		return 0, fmt.Errorf("must be an integer from 1 to %d, got %s", persistence.MaxPriority, jsonscan.Truncate(string(val), 32))
	}
	return int(v), nil
}

// seconds decodes a delay: a JSON number of seconds (fractions allowed),
// or a string holding a Go duration such as "90s" or "1h30m" — one rule
// for perform_in wherever it is written (docs/contract.md §3.1). Its range
// is persistence.PerformAt's to check.
func seconds(val []byte) (*float64, error) {
	switch k := jsonscan.KindOf(val); k {
	case "a number":
		v, err := jsonscan.FiniteNumber(val)
		return &v, err
	case "a string":
	default:
		return nil, fmt.Errorf("must be a number of seconds or a duration string such as \"90s\", got %s", k)
	}
	text, err := jsonscan.DecodeString(val)
	if err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return nil, fmt.Errorf("%q is not a duration such as \"90s\" or \"1h30m\" (a number is seconds)", jsonscan.Truncate(text, 64))
	}
	v := d.Seconds()
	return &v, nil
}

// decodeDedupKey decodes a "dedup_key" value: a string within
// persistence.ValidateDedupKey's limits ("" and null mean none).
func decodeDedupKey(val []byte, index int) (string, error) {
	if jsonscan.KindOf(val) == "null" {
		return "", nil
	}
	key, err := jsonscan.DecodeString(val)
	if err != nil {
		return "", err
	}
	if err := persistence.ValidateDedupKey(key, index); err != nil {
		var fe *persistence.FieldError
		if errors.As(err, &fe) {
			return "", errors.New(fe.Reason)
		}
		return "", err
	}
	return key, nil
}

// decodeHeaders decodes a "headers" value: an object of strings (null means
// none), within persistence.ValidateHeaders' limits. As with an id, a name
// or value that would not survive decoding (invalid UTF-8, an unpaired
// surrogate escape) is refused rather than changed into another (two names
// could merge), and so are a value that is not a string (null included)
// and a name given twice; the error names the header.
func decodeHeaders(val []byte, index int) (map[string]string, error) {
	if k := jsonscan.KindOf(val); k == "null" {
		return nil, nil
	} else if k != "an object" {
		return nil, fmt.Errorf("must be an object of strings, got %s", k)
	}
	h := map[string]string{}
	err := jsonscan.EachRawField(val, func(name, v []byte) error {
		key, err := jsonscan.DecodeString(name)
		if err != nil {
			return fmt.Errorf("header %s: the name is %v", jsonscan.Truncate(string(name), 64), err)
		}
		if _, dup := h[key]; dup {
			return fmt.Errorf("header %q: given more than once", jsonscan.Truncate(key, 64))
		}
		if h[key], err = jsonscan.DecodeString(v); err != nil {
			return fmt.Errorf("header %q: %v", jsonscan.Truncate(key, 64), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	val = jsonscan.Compact(val)
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
