package apiv1

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

// Payload is one stored payload as the API shows it, the one place that
// decides how payload bytes are rendered:
//
//	{"payload": {"a":1}, "score": 1700000000.5}
//	{"payload_base64": "AP8=", "score": 1700000000.5, "headers": {"k": "v"}}
//
// The bytes appear as a JSON value under "payload" when they are one, byte
// for byte: valid UTF-8 JSON in compact form, which is how the API stores
// every JSON payload. Anything else (binary, or JSON with insignificant
// whitespace enqueued by the Go client) appears as standard base64 under
// "payload_base64", so that every answer reproduces the stored bytes
// exactly: payload identity is byte equality. (Byte for byte holds when the
// encoder does not escape HTML, as the server's answers do not; json.Marshal
// escapes <, > and & in strings, which keeps the value but not the bytes.)
//
// "headers" (docs/contract.md §10) is there only when the payload has some.
type Payload struct {
	Data    []byte
	Score   float64
	Headers map[string]string
}

// MarshalJSON implements json.Marshaler.
func (p Payload) MarshalJSON() ([]byte, error) {
	score, err := json.Marshal(p.Score)
	if err != nil {
		return nil, fmt.Errorf("apiv1: payload score: %w", err)
	}
	b := make([]byte, 0, len(p.Data)*4/3+len(score)+32)
	if IsJSONPayload(p.Data) {
		b = append(b, `{"payload":`...)
		b = append(b, p.Data...)
	} else {
		b = append(b, `{"payload_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, p.Data)
		b = append(b, '"')
	}
	b = append(b, `,"score":`...)
	b = append(b, score...)
	if len(p.Headers) > 0 {
		h, err := json.Marshal(p.Headers)
		if err != nil {
			return nil, fmt.Errorf("apiv1: payload headers: %w", err)
		}
		b = append(b, `,"headers":`...)
		b = append(b, h...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON implements json.Unmarshaler; it reads what MarshalJSON
// writes, compacting a "payload" value as the enqueue endpoint does.
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
	switch {
	case v.Payload != nil && v.PayloadBase64 != nil:
		return errors.New("apiv1: payload and payload_base64 both given")
	case v.Payload != nil:
		var buf bytes.Buffer
		if err := json.Compact(&buf, v.Payload); err != nil {
			return err
		}
		p.Data = buf.Bytes()
	case v.PayloadBase64 != nil:
		data, err := base64.StdEncoding.DecodeString(*v.PayloadBase64)
		if err != nil {
			return fmt.Errorf("apiv1: payload_base64: %w", err)
		}
		p.Data = data
	default:
		return errors.New("apiv1: payload or payload_base64 required")
	}
	p.Score = v.Score
	p.Headers = v.Headers
	return nil
}

// IsJSONPayload reports whether stored payload bytes are shown as a JSON
// value: valid UTF-8, valid JSON, and compact (no whitespace outside
// strings), so that the JSON text of the answer is the stored bytes.
func IsJSONPayload(b []byte) bool {
	return utf8.Valid(b) && json.Valid(b) && jsonscan.IsCompact(b)
}

// Payloads converts stored payloads for an answer; never nil, so that an
// empty list is [] rather than null.
func Payloads(ps []persistence.Payload) []Payload {
	out := make([]Payload, len(ps))
	for i, p := range ps {
		out[i] = Payload{Data: p.Data, Score: p.Score, Headers: p.Headers}
	}
	return out
}
