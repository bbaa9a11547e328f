package client

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// fastLeases are leases the fast path must decode as encoding/json
// decodes a PullLease, or leave to it.
var fastLeases = []string{
	`{"lease":"l1","deadline":4102444800.123,"jobs":[{"id":"a","retry_count":-1,"perform_at":1.5,"payloads":[{"payload":{"x": 1},"score":1,"headers":{"k":"v"}},` +
		`{"payload_base64":"AP8=","score":2,"expires_at":1767225600.5}]},` +
		`{"id":"b\u00e9\n","retry_count":2,"perform_at":3e2,"error":"boom","payloads":[{"payload":"","score":0,"headers":{}}]},` +
		`{"id":"s1","retry_count":-1,"perform_at":4,"state":{"n": 1},"version":3,"payloads":[]},` +
		`{"id":"s2","retry_count":-1,"perform_at":4,"state_base64":"AAE=","version":1,"payloads":[{"payload":1,"score":1}]},` +
		`{"id":"s3","retry_count":-1,"perform_at":4,"state":null,"deleted":true,"version":7,"timer":true,"payloads":[]},` +
		`{"id":"s4","retry_count":-1,"perform_at":4,"state":null,"version":2,"payloads":[]}]}`,
	` { "jobs" : [ { "id" : "a" , "payloads" : [ { "payload" : [1, 2] } ] } ] , "other" : {"jobs": 1} , "lease" : "x" } `,
	`{"lease":"l1","deadline":1,"jobs":[]}`, `{"jobs":null}`, `{}`, `null`, `[]`, `{"jobs":[{"id":null}]}`,
	`{"Jobs":[{"id":"a"}]}`, `{"jobs":[{"ID":"a","Payloads":[]}]}`, `{"jobs":[{"id":"a","payloads":[{"Payload":1}]}]}`,
	`{"lease":"a","jobs":[],"lease":"b"}`, `{"jobs":[{"id":"a","id":"b"}]}`, `{"lease\u0041":"a"}`,
	`{"jobs":[{"id":"a","retry_count":1.5}]}`, `{"jobs":[{"id":"a","retry_count":1e2}]}`, `{"deadline":1e999}`,
	`{"jobs":[{"id":"a","version":-0}]}`, `{"jobs":[{"id":"\ud800"}]}`, "{\"jobs\":[{\"id\":\"\xff\"}]}",
	`{"jobs":[{"id":"a","payloads":[{"payload":null,"headers":{"k":null}}]}]}`, `{"jobs":[{"id":"a","payloads":null}]}`,
	`{"jobs":[{"id":"a","payloads":[{"payload":1,"payload_base64":"AA=="}]}]}`, `{"jobs":[{"id":"a","payloads":[{}]}]}`,
	`{"jobs":[{"id":"a","payloads":[{"payload_base64":"!"}]}]}`, `{"jobs":[{"id":"a","state_base64":"!"}]}`,
	`{"jobs":[{"id":"a","deleted":null,"timer":"x"}]}`, `{"lease":"q"} x`, `{"lease":"q"}{}`, `{"lease":"q"`,
	`{"jobs":[{"id":"a","\u017fcore":1}]}`, `{"jobs":[{"id":"a","unknown":{"id":"b"}}]}`,
}

// The fast path decodes each lease as encoding/json does, or gives up.
func TestLeaseFastPathAsEncodingJSON(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, body := range fastLeases {
		if checkLeaseFastPath(t, []byte(body)) {
			fast++
		}
	}
	require.GreaterOrEqual(t, fast, 5, "the node's shapes take the fast path")
	require.True(t, checkLeaseFastPath(t, []byte(fastLeases[0])), "the node's lease takes the fast path")
}

// checkLeaseFastPath compares the fast path with encoding/json on b, and
// reports whether the fast path decoded it.
func checkLeaseFastPath(t *testing.T, b []byte) bool {
	t.Helper()
	got, err := decodeLeaseFast(b)
	if err != nil {
		return false
	}
	var want PullLease
	require.NoError(t, json.Unmarshal(b, &want), "the fast path decoded what encoding/json refuses: %s", b)
	require.Equal(t, &want, got, "%s", b)
	return true
}

// FuzzLeaseFastPath: whatever the body, the fast path agrees with
// encoding/json or gives up.
func FuzzLeaseFastPath(f *testing.F) {
	for _, body := range fastLeases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkLeaseFastPath(t, b) })
}
