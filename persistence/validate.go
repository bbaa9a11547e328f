package persistence

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// ValidateQueueName reports whether name may name a queue: 1 to
// MaxQueueNameBytes of ASCII letters, digits, '_', '-' and '.', starting with
// a letter or digit. Queue names appear in Redis keys and URLs.
func ValidateQueueName(name string) error {
	if name == "" {
		return fieldErr("queue", -1, "must not be empty")
	}
	if len(name) > MaxQueueNameBytes {
		return fieldErr("queue", -1, "longer than %d bytes", MaxQueueNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '_' || c == '-' || c == '.'
		}
		if !ok {
			return fieldErr("queue", -1, "%q: only letters, digits, '_', '-' and '.' are allowed, starting with a letter or digit", name)
		}
	}
	return nil
}

// ValidateShards reports whether n is a valid shard count.
func ValidateShards(n int) error {
	if n < 1 || n > MaxShards {
		return fieldErr("shards", -1, "must be between 1 and %d, got %d", MaxShards, n)
	}
	return nil
}

// ValidateID reports whether id may name a job: non-empty valid UTF-8 of at
// most MaxIDBytes bytes. index is the job's position in a batch (-1 if none).
func ValidateID(id string, index int) error {
	switch {
	case id == "":
		return fieldErr("id", index, "must not be empty")
	case len(id) > MaxIDBytes:
		return fieldErr("id", index, "longer than %d bytes (%d)", MaxIDBytes, len(id))
	case !utf8.ValidString(id):
		return fieldErr("id", index, "not valid UTF-8")
	}
	return nil
}

// MaxTimeSeconds is the latest time a job may be due, in unix seconds:
// 2^34, in the year 2514. Times are kept as float unix seconds, which hold
// this range to the microsecond. The earliest is 0 (1970).
const MaxTimeSeconds = 1 << 34

// PerformAt is the one rule for when a new job becomes due, whatever
// carried it (the HTTP API, an actor message, the CLI, the Go client):
// at, in unix seconds, when given; else now plus in seconds, when given;
// else the zero time, which Enqueue reads as the store's now. Giving both,
// a value that is not a finite number, a negative one, or a time outside 0
// to MaxTimeSeconds is an error: a *FieldError naming perform_at or
// perform_in, with Index index (-1 for a job on its own).
func PerformAt(at, in *float64, now time.Time, index int) (time.Time, error) {
	return timeOf("perform_at", "perform_in", at, in, now, index)
}

// ExpiresAt is the one rule for a new job's expiry (docs/contract.md
// §3.15), PerformAt's for expires_at and expires_in: at, in unix seconds,
// when given; else now plus in seconds, when given; else the zero time (no
// expiry). Giving both, a value that is not a finite number, a negative
// expires_in or a time outside 0 to MaxTimeSeconds is a *FieldError naming
// expires_at or expires_in. A time already past is accepted: the payload
// expires at its first fetch.
func ExpiresAt(at, in *float64, now time.Time, index int) (time.Time, error) {
	return timeOf("expires_at", "expires_in", at, in, now, index)
}

// timeOf is PerformAt's and ExpiresAt's rule, its errors naming atField or
// inField.
func timeOf(atField, inField string, at, in *float64, now time.Time, index int) (time.Time, error) {
	switch {
	case at != nil && in != nil:
		return time.Time{}, fieldErr(inField, index, "give %s or %s, not both", atField, inField)
	case at != nil:
		if reason := checkSeconds(*at); reason != "" {
			return time.Time{}, fieldErr(atField, index, "%s", reason)
		}
		return FromUnixSeconds(*at), nil
	case in != nil:
		switch v := *in; {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return time.Time{}, fieldErr(inField, index, "must be a finite number")
		case v < 0:
			return time.Time{}, fieldErr(inField, index, "must not be negative")
		}
		sec := UnixSeconds(now) + *in
		if sec > MaxTimeSeconds {
			return time.Time{}, fieldErr(inField, index, "out of range: the time would be after unix second %d", int64(MaxTimeSeconds))
		}
		return FromUnixSeconds(sec), nil
	}
	return time.Time{}, nil
}

// timeOutOfRange is the reason of a perform_at outside 0 to MaxTimeSeconds,
// however it was given.
var timeOutOfRange = fmt.Sprintf("out of range: must be unix seconds between 0 and %d", int64(MaxTimeSeconds))

// checkSeconds returns why unix seconds cannot be a job's perform_at, or "".
func checkSeconds(sec float64) string {
	switch {
	case math.IsNaN(sec) || math.IsInf(sec, 0):
		return "must be a finite number"
	case sec < 0 || sec > MaxTimeSeconds:
		return timeOutOfRange
	}
	return ""
}

// ValidateJobs checks a batch of jobs before anything is written: ids,
// payload sizes (maxPayload bytes; <= 0 means DefaultMaxPayloadBytes),
// finite scores, and times between 0 and MaxTimeSeconds. It returns the
// first *FieldError.
func ValidateJobs(jobs []NewJob, maxPayload int) error {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayloadBytes
	}
	for i, j := range jobs {
		if err := ValidateID(j.ID, i); err != nil {
			return err
		}
		if len(j.Payload) > maxPayload {
			return fieldErr("payload", i, "%d bytes, more than the limit of %d", len(j.Payload), maxPayload)
		}
		if j.Score != nil && (math.IsNaN(*j.Score) || math.IsInf(*j.Score, 0)) {
			return fieldErr("score", i, "must be a finite number")
		}
		if !j.PerformAt.IsZero() {
			if reason := checkTime(j.PerformAt); reason != "" {
				return fieldErr("perform_at", i, "%s", reason)
			}
		}
		if !j.ExpiresAt.IsZero() {
			if reason := checkTime(j.ExpiresAt); reason != "" {
				return fieldErr("expires_at", i, "%s", reason)
			}
		}
		if err := ValidateHeaders(j.Headers, i); err != nil {
			return err
		}
		if err := ValidateDedupKey(j.DedupKey, i); err != nil {
			return err
		}
		if err := ValidatePriority(j.Priority, i); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePriority reports whether p may be a job's priority
// (docs/contract.md §3.16): 0 (the default, 1) or 1 to MaxPriority. index
// is the job's position in a batch (-1 if none); the error is a
// *FieldError naming priority.
func ValidatePriority(p, index int) error {
	if p < 0 || p > MaxPriority {
		return fieldErr("priority", index, "%d is not an integer from 1 to %d", p, MaxPriority)
	}
	return nil
}

// ValidateDedupKey reports whether key may be a job's dedup key
// (docs/contract.md §3.12): empty (none), or at most MaxDedupKeyBytes bytes
// of valid UTF-8. index is the job's position in a batch (-1 if none); the
// error is a *FieldError naming dedup_key.
func ValidateDedupKey(key string, index int) error {
	if len(key) > MaxDedupKeyBytes {
		return fieldErr("dedup_key", index, "%d bytes, more than the limit of %d", len(key), MaxDedupKeyBytes)
	}
	if !utf8.ValidString(key) {
		return fieldErr("dedup_key", index, "must be valid UTF-8")
	}
	return nil
}

// ValidateHeaders reports whether h may be a payload's headers
// (docs/contract.md §10): at most MaxHeaders entries, at most
// MaxHeaderBytes of keys and values, no empty key, valid UTF-8. index is
// the job's position in a batch (-1 if none); the error is a *FieldError
// naming headers.
func ValidateHeaders(h map[string]string, index int) error {
	if len(h) > MaxHeaders {
		return fieldErr("headers", index, "%d entries, more than the limit of %d", len(h), MaxHeaders)
	}
	n := 0
	for k, v := range h {
		if k == "" {
			return fieldErr("headers", index, "a key must not be empty")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fieldErr("headers", index, "key %q: not valid UTF-8", k)
		}
		n += len(k) + len(v)
	}
	if n > MaxHeaderBytes {
		return fieldErr("headers", index, "%d bytes of keys and values, more than the limit of %d", n, MaxHeaderBytes)
	}
	return nil
}

// Times must survive the round trip through float unix seconds.
var (
	minTime = time.Unix(0, 0)
	maxTime = time.Unix(MaxTimeSeconds, 0)
)

// checkTime returns why t cannot be a job's perform_at, or "".
func checkTime(t time.Time) string {
	if t.Before(minTime) || t.After(maxTime) {
		return timeOutOfRange
	}
	return ""
}
