package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

const (
	// maxQuotedBody is the most of an answer's body quoted in an error.
	maxQuotedBody = 4 << 10
	// jsonSpace holds the bytes that JSON counts as whitespace.
	jsonSpace = " \t\r\n"
)

// Answer is the body of a 2xx answer that fails some ids of a delivery:
// {"failed": {"<id>": "<error>", ...}}. The ids it does not name are
// acknowledged; a 2xx answer with an empty body acknowledges every id.
type Answer struct {
	Failed map[string]string `json:"failed"`
}

// errBadAnswer is wrapped by the error of decodeAnswer.
var errBadAnswer = errors.New(`the body is not empty and not {"failed": {"<id>": "<error>", ...}}`)

// decodeAnswer decodes the body of a 2xx answer. An empty body (or one of
// JSON whitespace only) returns nil, nil: every id is acknowledged.
// {"failed": {...}} returns the failed ids with their messages (an empty,
// non-nil map for {"failed": {}}). Anything else returns an error wrapping
// errBadAnswer.
//
// The body comes from the network: decodeAnswer must not panic on any
// input.
func decodeAnswer(body []byte) (map[string]string, error) {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return nil, nil
	}
	// json.Unmarshal rejects trailing data after the top-level value.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, badAnswer("not a JSON object")
	}
	raw, ok := top["failed"]
	if !ok || len(top) != 1 {
		return nil, badAnswer(`the object's only member must be "failed"`)
	}
	const notStrings = `"failed" must be an object of strings`
	var messages map[string]*string
	if err := json.Unmarshal(raw, &messages); err != nil || messages == nil {
		return nil, badAnswer(notStrings)
	}
	failed := make(map[string]string, len(messages))
	for id, msg := range messages {
		if msg == nil {
			return nil, badAnswer(notStrings)
		}
		failed[id] = *msg
	}
	return failed, nil
}

// badAnswer returns an error wrapping errBadAnswer with the reason.
func badAnswer(reason string) error {
	return fmt.Errorf("%w: %s", errBadAnswer, reason)
}

// quoteBody returns at most maxQuotedBody bytes of body for an error,
// without trailing whitespace.
func quoteBody(body []byte) string {
	if len(body) > maxQuotedBody {
		body = trimPartialRune(body[:maxQuotedBody])
	}
	return string(bytes.TrimRight(body, jsonSpace))
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, left
// by cutting b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
