package wire

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// testRequest holds a job of each kind: payloads of every form, an error,
// a stateful job with JSON state, one with binary state, one without state,
// one whose state was deleted, and one its timer brought.
func testRequest() Request {
	return Request{Queue: "emails<>", Shard: 3, Jobs: []Job{
		{ID: "a", RetryCount: -1, PerformAt: 1795680448.76, Payloads: []Payload{
			{Data: []byte(`{"x":1}`), Score: 1},
			{Data: []byte(`{"x": 1}`), Score: 2},
			{Data: []byte{0, 0xff}, Score: 3, Headers: map[string]string{"trace": "t1", "a": "<b>"}},
		}},
		{ID: "ünï\"code", RetryCount: 4, PerformAt: 1, Error: "boom\n<tag>", Payloads: []Payload{{Data: []byte(`"s"`), Score: 1e-7}}},
		{ID: "s1", Payloads: []Payload{}, Stateful: true, State: []byte(`{"n":1}`), Version: 4},
		{ID: "s2", Payloads: []Payload{}, Stateful: true, State: []byte{0, 0xff}, Version: 2},
		{ID: "s3", Payloads: []Payload{}, Stateful: true},
		{ID: "s4", Payloads: []Payload{}, Stateful: true, Version: 9},
		{ID: "s5", Payloads: []Payload{}, Stateful: true, State: []byte(`null`), Version: 1, Timer: true},
	}}
}

// The body is what the protocol says, byte for byte.
func TestRequestBody(t *testing.T) {
	t.Parallel()
	body, err := testRequest().MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `{"queue":"emails\u003c\u003e","shard":3,"jobs":[`+
		`{"id":"a","retry_count":-1,"perform_at":1795680448.76,"payloads":[{"payload":{"x":1},"score":1},{"payload_base64":"eyJ4IjogMX0=","score":2},{"payload_base64":"AP8=","score":3,"headers":{"a":"\u003cb\u003e","trace":"t1"}}]},`+
		`{"id":"ünï\"code","retry_count":4,"perform_at":1,"error":"boom\n\u003ctag\u003e","payloads":[{"payload":"s","score":1e-7}]},`+
		`{"id":"s1","retry_count":0,"perform_at":0,"state":{"n":1},"version":4,"payloads":[]},`+
		`{"id":"s2","retry_count":0,"perform_at":0,"state_base64":"AP8=","version":2,"payloads":[]},`+
		`{"id":"s3","retry_count":0,"perform_at":0,"state":null,"version":0,"payloads":[]},`+
		`{"id":"s4","retry_count":0,"perform_at":0,"state":null,"deleted":true,"version":9,"payloads":[]},`+
		`{"id":"s5","retry_count":0,"perform_at":0,"state":null,"version":1,"timer":true,"payloads":[]}]}`,
		string(body))

	viaJSON, err := json.Marshal(testRequest())
	require.NoError(t, err)
	require.Equal(t, string(body), string(viaJSON), "json.Marshal writes MarshalJSON's bytes")
}

// A round trip keeps every payload's bytes and every field.
func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	body, err := json.Marshal(testRequest())
	require.NoError(t, err)
	var got Request
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, testRequest(), got)

	// The decoded bytes do not alias the body (json.Unmarshaler's rule).
	for i := range body {
		body[i] = 'x'
	}
	require.Equal(t, testRequest(), got)

	// A job alone decodes as in a request.
	jb, err := json.Marshal(testRequest().Jobs[5])
	require.NoError(t, err)
	var j Job
	require.NoError(t, json.Unmarshal(jb, &j))
	require.Equal(t, testRequest().Jobs[5], j)
}

func TestRequestEncodingErrors(t *testing.T) {
	t.Parallel()
	r := testRequest()
	r.Jobs[0].Payloads[1].Score = math.NaN()
	_, err := r.MarshalJSON()
	require.ErrorContains(t, err, `wire: job "a": score`)
	r = testRequest()
	r.Jobs[1].PerformAt = math.Inf(1)
	_, err = r.MarshalJSON()
	require.ErrorContains(t, err, `perform_at`)
}

func TestRequestDecoding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, err string }{
		{`{"jobs":[{"id":"a","payloads":[{"score":1}]}]}`, "wire: jobs[0]: payloads[0]: payload or payload_base64 required"},
		{`{"jobs":[{"id":"a"},{"id":"b","payloads":[{"payload":1,"payload_base64":"AA=="}]}]}`, "wire: jobs[1]: payloads[0]: payload and payload_base64 both given"},
		{`{"jobs":[{"id":"a","payloads":[{"payload_base64":"!"}]}]}`, "payload_base64"},
		{`{"jobs":[{"id":"a","state_base64":"!"}]}`, "state_base64"},
		{`{"queue":"q","shard":1.5,"jobs":[]}`, "cannot unmarshal"},
		{`{"queue":"q"} x`, "invalid character"},
	} {
		var r Request
		require.ErrorContains(t, json.Unmarshal([]byte(c.body), &r), c.err, c.body)
	}

	// As encoding/json decodes a struct: names in any case, unknown
	// members ignored, whitespace anywhere; a JSON value with whitespace
	// is compacted.
	var r Request
	require.NoError(t, json.Unmarshal([]byte(" {\"QUEUE\": \"q\", \"extra\": [1], \"jobs\": [ {\"id\": \"a\", \"payloads\": [ {\"payload\": [1, 2], \"score\": -0} ] } ] }\n"), &r))
	require.Equal(t, Request{Queue: "q", Jobs: []Job{{ID: "a", Payloads: []Payload{{Data: []byte(`[1,2]`)}}}}}, r)
	require.NoError(t, json.Unmarshal([]byte(`{"jobs":[{"id":"a","state":{"n": 1},"version":3}]}`), &r))
	require.Equal(t, Request{Jobs: []Job{{ID: "a", Stateful: true, State: []byte(`{"n":1}`), Version: 3}}}, r)
}

// requestSeeds are bodies for FuzzRequest: the node's, and odd ones.
var requestSeeds = []string{
	`{"queue":"q","shard":0,"jobs":[]}`,
	`{"queue":"emails","shard":3,"jobs":[{"id":"a","retry_count":-1,"perform_at":1795680448.76,"payloads":[{"payload":{"x": [1, "y", null, true]},"score":1}]}]}`,
	`{"queue":"q","shard":1,"jobs":[{"id":"ünï","retry_count":4,"perform_at":0,"error":"boom","payloads":[{"payload_base64":"bm90IGpzb24=","score":1e-7},{"payload":"s\"\u00e9","score":2.5,"headers":{"a":"b","trace":"t1"}}]},{"id":"b","retry_count":0,"perform_at":1,"payloads":[]}]}`,
	`{"jobs":[{"id":"a","version":3,"state":{"n":1},"payloads":[]}]}`,
	`{"jobs":[{"id":"a","version":3,"state":null,"deleted":true,"timer":true}]}`,
	`{"jobs":[{"id":"a","version":3,"state_base64":"AP8="}]}`,
	`{"queue":"q\u0041","Queue":"r","jobs":null}`,
	`{"jobs":[{"id":"a","payloads":[{"payload":null}]}]}`,
	"{\"queue\":\"bad\xff\"}",
	`{"shard":1e999}`,
	`[]`,
}

// FuzzRequest checks that decoding never panics, accepts only what
// encoding/json accepts as JSON, and that what decodes encodes to a body
// that decodes to the same Request (a receiver that forwards a request
// keeps it).
func FuzzRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if err := json.Unmarshal(body, &r); err != nil {
			return
		}
		require.True(t, json.Valid(body))
		again, err := r.MarshalJSON()
		require.NoError(t, err)
		require.True(t, json.Valid(again), "%s", again)
		var back Request
		require.NoError(t, json.Unmarshal(again, &back), "%s", again)
		if len(r.Jobs) == 0 {
			r.Jobs = nil // "jobs": [] and null both come back as []
			back.Jobs = nil
		}
		require.Equal(t, normalize(r), normalize(back))
	})
}

// normalize maps the forms that encode alike to one: no payloads and an
// empty list, no headers and an empty map; a job that is not stateful
// drops its state fields, which only a stateful job carries, and state at
// version 0 is no state.
func normalize(r Request) Request {
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if len(j.Payloads) == 0 {
			j.Payloads = []Payload{}
		}
		for k := range j.Payloads {
			if len(j.Payloads[k].Headers) == 0 {
				j.Payloads[k].Headers = nil
			}
		}
		switch {
		case !j.Stateful:
			j.Version, j.Timer = 0, false
		case j.Version == 0:
			j.State = nil // an id without state
		}
	}
	return r
}
