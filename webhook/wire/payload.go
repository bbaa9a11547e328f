package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Payload is one payload of a Job, and of a job as the HTTP API shows it:
// its stored bytes, its score and its headers. On the wire the bytes
// appear as "payload" when IsCompactJSON holds for them, byte for byte,
// and as "payload_base64" otherwise (see "Payloads" in the package
// documentation); "headers" (an object of strings, keys sorted) only when
// the payload has some (docs/contract.md §10); "expires_at" (unix seconds)
// only when it expires (docs/contract.md §3.15):
//
//	{"payload":{"a":1},"score":1700000000.5}
//	{"payload_base64":"AP8=","score":1700000000.5,"headers":{"k":"v"}}
//	{"payload":"x","score":1700000000.5,"expires_at":1700000600}
type Payload struct {
	Data    []byte
	Score   float64
	Headers map[string]string
	// ExpiresAt is when the payload expires; the zero time when it does
	// not.
	ExpiresAt time.Time
}

// IsCompactJSON reports whether stored bytes appear on the wire as a JSON
// value ("payload", "state") rather than in base64: they are one JSON
// value, in valid UTF-8, with no whitespace outside its strings. Such bytes
// are what any JSON writer writes for the value, so a reader gets them back
// exactly, and payload identity (byte equality) survives the trip. It is
// the one rule of the webhook and of the HTTP API.
func IsCompactJSON(data []byte) bool {
	return utf8.Valid(data) && json.Valid(data) && isCompact(data)
}

// isCompact reports whether well-formed JSON b has no whitespace outside
// its strings.
func isCompact(b []byte) bool {
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			return false
		}
	}
	return true
}

// MarshalJSON implements json.Marshaler. NaN and infinite scores have no
// JSON form and are an error.
func (p Payload) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, p.size()))
}

// size estimates the length of p's JSON.
func (p *Payload) size() int {
	n := 48 + len(p.Data)*4/3
	for k, v := range p.Headers {
		n += 8 + len(k) + len(v)
	}
	return n
}

// appendJSON appends p's JSON to dst.
func (p *Payload) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	dst = appendBytes(dst, "payload", p.Data)
	dst = append(dst, `,"score":`...)
	dst, err := appendNumber(dst, p.Score)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	if len(p.Headers) > 0 {
		b, err := json.Marshal(p.Headers) // a map of strings always marshals, keys sorted
		if err != nil {
			return nil, fmt.Errorf("headers: %w", err)
		}
		dst = append(dst, `,"headers":`...)
		dst = append(dst, b...)
	}
	if !p.ExpiresAt.IsZero() {
		dst = append(dst, `,"expires_at":`...)
		if dst, err = appendNumber(dst, float64(p.ExpiresAt.Unix())+float64(p.ExpiresAt.Nanosecond())/1e9); err != nil {
			return nil, fmt.Errorf("expires_at: %w", err)
		}
	}
	return append(dst, '}'), nil
}

// appendBytes appends the member of an object that carries data under
// name: "<name>" with data itself when IsCompactJSON(data), else
// "<name>_base64" with data in standard base64.
func appendBytes(dst []byte, name string, data []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, name...)
	if IsCompactJSON(data) {
		dst = append(dst, `":`...)
		return append(dst, data...)
	}
	dst = append(dst, `_base64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, '"')
}

// payloadJSON is a payload as encoding/json decodes it.
type payloadJSON struct {
	Payload       json.RawMessage   `json:"payload"`
	PayloadBase64 *string           `json:"payload_base64"`
	Score         float64           `json:"score"`
	Headers       map[string]string `json:"headers"`
	ExpiresAt     *float64          `json:"expires_at"`
}

// UnmarshalJSON implements json.Unmarshaler: Data is the value of
// "payload", compacted when it has whitespace outside its strings, or the
// decoded "payload_base64". Exactly one of the two must be given.
func (p *Payload) UnmarshalJSON(b []byte) error {
	var v payloadJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	out, err := v.payload()
	if err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	*p = out
	return nil
}

// payload converts a decoded payload.
func (v *payloadJSON) payload() (Payload, error) {
	p := Payload{Score: v.Score, Headers: v.Headers}
	if v.ExpiresAt != nil {
		sec, frac := math.Modf(*v.ExpiresAt)
		p.ExpiresAt = time.Unix(int64(sec), int64(math.Round(frac*1e9)))
	}
	switch {
	case v.Payload != nil && v.PayloadBase64 != nil:
		return p, errors.New("payload and payload_base64 both given")
	case v.Payload != nil:
		p.Data = compact(v.Payload)
	case v.PayloadBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.PayloadBase64)
		if err != nil {
			return p, fmt.Errorf("payload_base64: %w", err)
		}
		p.Data = data
	default:
		return p, errors.New("payload or payload_base64 required")
	}
	return p, nil
}

// compact returns a JSON value without whitespace outside its strings:
// raw itself when it has none.
func compact(raw []byte) []byte {
	if isCompact(raw) {
		return raw
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return raw // not JSON: encoding/json hands a decoder only valid values
	}
	return buf.Bytes()
}
