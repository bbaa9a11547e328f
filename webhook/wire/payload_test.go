package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// payloadCases are stored bytes and whether they appear as "payload".
var payloadCases = []struct {
	data string
	json bool
}{
	{`{"a":1}`, true},
	{`[1,"two  spaces",{"b":null}]`, true},
	{`"plain text"`, true},
	{`null`, true},
	{`-12.5e3`, true},
	{`"<script>&amp;</script>"`, true},
	{`"caf\u00e9"`, true},
	{`"café"`, true},
	{`{"a": 1}`, false},    // whitespace outside strings
	{"[1,\n2]", false},     // whitespace outside strings
	{` 1`, false},          // outer whitespace
	{"1\t", false},         // outer whitespace
	{"\"caf\xe9\"", false}, // JSON per json.Valid, invalid UTF-8
	{"caf\xe9", false},     // invalid UTF-8, not JSON
	{"not json", false},
	{`{"a":1} trailing`, false},
	{"", false},
	{"\x00\x01\x02\xff", false},
}

func TestIsCompactJSON(t *testing.T) {
	t.Parallel()
	for _, c := range payloadCases {
		require.Equal(t, c.json, IsCompactJSON([]byte(c.data)), "%q", c.data)
	}
}

// A payload's JSON reproduces its stored bytes exactly, through
// Payload.UnmarshalJSON, and encoding/json without HTML escaping (the HTTP
// API's writer) writes it as Payload.MarshalJSON does.
func TestPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range payloadCases {
		p := Payload{Data: []byte(c.data), Score: 1.5, Headers: map[string]string{"k": "<v>"}}
		b, err := p.MarshalJSON()
		require.NoError(t, err)
		require.True(t, json.Valid(b), "%s", b)
		require.Equal(t, c.json, bytes.HasPrefix(b, []byte(`{"payload":`)), "%s", b)
		var back Payload
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, []byte(c.data), back.Data, "%q", c.data)
		require.Equal(t, p.Headers, back.Headers)
		require.Equal(t, p.Score, back.Score)

		require.Equal(t, string(b)+"\n", encodeNoEscape(t, p), "%q", c.data)
	}
}

// encodeNoEscape encodes v as the HTTP API writes its answers.
func encodeNoEscape(t testing.TB, v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return buf.String()
}

func TestPayloadDecoding(t *testing.T) {
	t.Parallel()
	var p Payload
	require.NoError(t, json.Unmarshal([]byte(`{"payload": {"a": [1, 2]}, "score": 2}`), &p))
	require.Equal(t, `{"a":[1,2]}`, string(p.Data), "a value with whitespace is compacted, as the HTTP API stores it")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"payload": 1, "payload_base64": "AA==", "score": 1}`), &p), "both given")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"score": 1}`), &p), "payload or payload_base64 required")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"payload_base64": "!!", "score": 1}`), &p), "payload_base64")
	require.NoError(t, json.Unmarshal([]byte(`{"payload_base64": "", "score": 1}`), &p))
	require.Equal(t, []byte{}, p.Data)
}

// FuzzIsCompactJSON checks the payload rule against encoding/json: stored
// bytes appear as "payload" exactly when they are valid JSON in valid
// UTF-8 that json.Compact leaves as they are, and either way a payload's
// JSON decodes back to the same bytes and is what encoding/json writes.
func FuzzIsCompactJSON(f *testing.F) {
	for _, c := range payloadCases {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := false
		if utf8.Valid(data) && json.Valid(data) {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, data))
			want = bytes.Equal(buf.Bytes(), data)
		}
		require.Equal(t, want, IsCompactJSON(data), "%q", data)

		p := Payload{Data: data, Score: 1}
		b, err := p.MarshalJSON()
		require.NoError(t, err)
		var back Payload
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		require.True(t, bytes.Equal(data, back.Data), "%q came back as %q", data, back.Data)
		require.Equal(t, string(b)+"\n", encodeNoEscape(t, p))
	})
}

// A payload's expiry appears as "expires_at" in unix seconds, only when it
// has one, and reads back (docs/contract.md §3.15).
func TestPayloadExpiresAt(t *testing.T) {
	t.Parallel()
	p := Payload{Data: []byte(`1`), Score: 2, ExpiresAt: time.UnixMilli(1700000600250)}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.Equal(t, `{"payload":1,"score":2,"expires_at":1700000600.25}`, string(b))
	var back Payload
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, p.ExpiresAt.Equal(back.ExpiresAt), "%v", back.ExpiresAt)

	b, err = json.Marshal(Payload{Data: []byte(`1`), Score: 2})
	require.NoError(t, err)
	require.Equal(t, `{"payload":1,"score":2}`, string(b))
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.ExpiresAt.IsZero())
}
