package persistence

import (
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

// ValidateJobs checks a batch of jobs before anything is written: ids,
// payload sizes (maxPayload bytes; <= 0 means DefaultMaxPayloadBytes),
// finite scores and times. It returns the first *FieldError.
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
			if err := validTime(j.PerformAt); err != nil {
				return fieldErr("perform_at", i, "%s", err.Reason)
			}
		}
	}
	return nil
}

// Times must survive the round trip through float unix seconds.
var (
	minTime = time.Unix(0, 0)
	maxTime = time.Unix(1<<34, 0) // year 2514
)

func validTime(t time.Time) *FieldError {
	if t.Before(minTime) || t.After(maxTime) {
		return fieldErr("perform_at", -1, "out of range (%s)", t.UTC().Format(time.RFC3339))
	}
	return nil
}
