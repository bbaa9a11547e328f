package webhook

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

// slowDecode decodes b as encoding/json alone does, without the fast path.
func slowDecode(b []byte) (Request, error) {
	type plain Request
	var r Request
	err := json.Unmarshal(b, (*plain)(&r))
	return r, err
}

// fastBodies are bodies of the shape the node writes for queues that are
// not stateful: each takes the fast path.
var fastBodies = []string{
	`{"queue":"q","shard":0,"jobs":[]}`,
	`{"queue":"emails","shard":3,"jobs":[{"id":"a","retry_count":-1,"perform_at":1795680448.76,"payloads":[{"payload":{"x": [1, "y", null, true]},"score":1}]}]}`,
	`{"queue":"q","shard":1,"jobs":[{"id":"ünï","retry_count":4,"perform_at":0,"error":"boom","payloads":[{"payload_base64":"bm90IGpzb24=","score":1e-7},{"payload":"s\"\u00e9","score":2.5,"headers":{"a":"b","trace":"t1"}}]},{"id":"b","retry_count":0,"perform_at":1,"payloads":[]}]}`,
	" \n{ \"queue\" : \"q\" , \"shard\" : 2 , \"jobs\" : [ { \"id\" : \"a\" , \"payloads\" : [ { \"payload\" : [ ] , \"score\" : -0 } ] } ] } \t",
	`{"jobs":[{"id":"a"}]}`,
	`{}`,
}

// slowBodies are valid or invalid bodies the fast path leaves to
// encoding/json.
var slowBodies = []string{
	`{"queue":"q\u0041","shard":0,"jobs":[]}`,                                            // escaped string
	`{"Queue":"q","shard":0,"jobs":[]}`,                                                  // a member in another case
	`{"queue":"q","queue":"r","jobs":[]}`,                                                // a repeated member
	`{"queue":"q","shard":0,"jobs":null}`,                                                // null
	`{"queue":"q","shard":1.5,"jobs":[]}`,                                                // not an int
	`{"queue":"q","extra":1,"jobs":[]}`,                                                  // an unknown member
	`{"jobs":[{"id":"a","version":3,"state":{"n":1},"payloads":[]}]}`,                    // stateful
	`{"jobs":[{"id":"a","payloads":[{"score":1}]}]}`,                                     // no payload
	`{"jobs":[{"id":"a","payloads":[{"payload":1,"payload_base64":"AA==","score":1}]}]}`, // both
	`{"jobs":[{"id":"a","payloads":[{"payload_base64":"!","score":1}]}]}`,                // bad base64
	`{"jobs":[{"id":"a","payloads":[{"payload":null}]}]}`,                                // null payload
	"{\"queue\":\"bad\xff\"}",                                                            // invalid UTF-8
	`{"queue":"q"} x`,                                                                    // trailing data
	`{"queue":"q",}`,                                                                     // invalid JSON
	`{"jobs":[{"id":"a","payloads":[{"payload":{"a":tru},"score":1}]}]}`,                 // invalid payload
	`{"shard":1e999}`,                                                                    // out of range
}

func TestDecodeFastPathMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, body := range fastBodies {
		var fast Request
		require.True(t, decodeRequestFast([]byte(body), &fast), body)
		slow, err := slowDecode([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, slow, fast, body)

		var viaJSON Request
		require.NoError(t, json.Unmarshal([]byte(body), &viaJSON))
		require.Equal(t, slow, viaJSON, body)
	}
	for _, body := range slowBodies {
		var fast Request
		require.False(t, decodeRequestFast([]byte(body), &fast), body)
		require.Equal(t, Request{}, fast, "left unchanged: %s", body)

		slow, serr := slowDecode([]byte(body))
		var got Request
		gerr := got.UnmarshalJSON([]byte(body))
		require.Equal(t, serr == nil, gerr == nil, body)
		if serr == nil {
			require.Equal(t, slow, got, body)
		}
	}
}

// TestDecodeNodeBodies checks that what the node sends takes the fast path
// and decodes to the Request it was built from.
func TestDecodeNodeBodies(t *testing.T) {
	t.Parallel()
	at := time.Unix(1795680448, 760_000_000)
	b := &orderly.Batch{Queue: "emails", Shard: 3, Jobs: []orderly.Job{
		{ID: "a", RetryCount: -1, PerformAt: at, Payloads: []orderly.Payload{{Data: []byte(`{"x": 1}`), Score: 1}}},
		{ID: "b", RetryCount: 4, PerformAt: at, Error: "boom", Payloads: []orderly.Payload{
			{Data: []byte("not json"), Score: 1e-7},
			{Data: []byte(`"s"`), Score: 2.5, Headers: map[string]string{"trace": "t1"}},
			{Data: []byte(`[1, 2]`), Score: math.MaxFloat64},
		}},
	}}
	body, err := appendBatch(nil, b)
	require.NoError(t, err)
	var got Request
	require.True(t, decodeRequestFast(body, &got))
	require.Equal(t, *requestOf(b), got)

	// The payloads do not alias the body (json.Unmarshaler's rule).
	for i := range body {
		body[i] = 'x'
	}
	require.Equal(t, *requestOf(b), got)
}

func FuzzDecodeRequest(f *testing.F) {
	for _, body := range append(fastBodies, slowBodies...) {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast Request
		if !decodeRequestFast(body, &fast) {
			return
		}
		slow, err := slowDecode(body)
		if err != nil {
			t.Fatalf("the fast path decoded %q, which encoding/json rejects: %v", body, err)
		}
		require.Equal(t, slow, fast)
	})
}
