package wire

import (
	"net/http"
	"time"
)

// Headers of a delivery request.
const (
	// DeliveryHeader names the delivery attempt:
	// "<queue>/<shard>/<epoch>/<seq>".
	DeliveryHeader = "Orderly-Delivery"
	// DeadlineHeader carries a delivery's deadline, in RFC 3339 with
	// milliseconds (DeadlineFormat), UTC. Past it the node gives the call
	// up; no other call for the same ids starts before it, on any node, so
	// a receiver that stops working on a delivery by its deadline never
	// overlaps another.
	DeadlineHeader = "Orderly-Deadline"
	// SignatureHeader carries a delivery's signature when the queue has a
	// secret:
	//
	//	Orderly-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
	//
	// The HMAC's key is the secret; its message is the decimal timestamp, a
	// dot, and the request body exactly as sent (Sign).
	SignatureHeader = "Orderly-Signature"
	// UserAgent is the User-Agent of every delivery request.
	UserAgent = "orderly-webhook"
)

// DeadlineFormat is the layout of DeadlineHeader (time.Format).
const DeadlineFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatDeadline returns t as DeadlineHeader writes it: UTC, truncated to
// the millisecond (never later than t).
func FormatDeadline(t time.Time) string { return t.UTC().Format(DeadlineFormat) }

// Deadline returns the deadline a delivery request carries in
// DeadlineHeader; ok is false when the header is missing or malformed. A
// receiver should stop working on the delivery by then (for example with
// context.WithDeadline(r.Context(), d)).
func Deadline(r *http.Request) (d time.Time, ok bool) {
	return ParseDeadline(r.Header.Get(DeadlineHeader))
}

// ParseDeadline parses a DeadlineHeader value (any RFC 3339 time is
// accepted); ok is false when v is not one.
func ParseDeadline(v string) (d time.Time, ok bool) {
	if v == "" || len(v) > 64 {
		return time.Time{}, false
	}
	d, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false
	}
	return d, true
}
