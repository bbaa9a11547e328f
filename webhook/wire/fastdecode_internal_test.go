package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// fastBodies are requests and leases the fast path of Request.UnmarshalJSON
// must decode as encoding/json does, or leave to it.
var fastBodies = []string{
	`{"queue":"q","shard":3,"jobs":[{"id":"a","retry_count":-1,"perform_at":1.5,"payloads":[{"payload":{"x": 1},"score":1,"headers":{"k":"v"}},` +
		`{"payload_base64":"AP8=","score":2,"expires_at":1767225600.5}]},` +
		`{"id":"b\u00e9\n","retry_count":2,"perform_at":3e2,"error":"boom","payloads":[{"payload":"","score":0,"headers":{}}]},` +
		`{"id":"s1","retry_count":-1,"perform_at":4,"state":{"n":1},"version":3,"payloads":[]},` +
		`{"id":"s2","retry_count":-1,"perform_at":4,"state_base64":"AAE=","version":1,"payloads":[{"payload":1,"score":1}]},` +
		`{"id":"s3","retry_count":-1,"perform_at":4,"state":null,"deleted":true,"version":7,"timer":true,"payloads":[]}]}`,
	`{"lease":"l1","deadline":4102444800.123,"jobs":[{"id":"a","retry_count":-1,"perform_at":1,"payloads":[{"payload":"x","score":1}]}]}`,
	` { "jobs" : [ { "id" : "a" , "payloads" : [ { "payload" : [1, 2] } ] } ] , "other" : {"jobs": 1} } `,
	`{"jobs":[]}`, `{"jobs":null}`, `{}`, `null`, `[]`, `{"jobs":[{"id":null}]}`,
	`{"Jobs":[{"id":"a"}]}`, `{"jobs":[{"ID":"a","Payloads":[]}]}`, `{"jobs":[{"id":"a","payloads":[{"Payload":1}]}]}`,
	`{"jobs":[{"id":"a"}],"jobs":[{"id":"b"}]}`, `{"jobs":[{"id":"a","id":"b"}]}`,
	`{"jobs":[{"id":"a","retry_count":1.5}]}`, `{"jobs":[{"id":"a","retry_count":1e2}]}`, `{"shard":99999999999999999999}`,
	`{"jobs":[{"id":"a","version":-0}]}`, `{"jobs":[{"id":"\ud800"}]}`, "{\"jobs\":[{\"id\":\"\xff\"}]}",
	`{"jobs":[{"id":"a","payloads":[{"payload":null,"headers":{"k":null}}]}]}`, `{"jobs":[{"id":"a","payloads":null}]}`,
	`{"jobs":[{"id":"a","deleted":null,"timer":"x"}]}`, `{"queue":"q"} x`, `{"queue":"q"}{}`, `{"queue":"q"`,
	`{"jobs":[{"id":"a","\u017fcore":1}]}`, `{"jobs":[{"id":"a","unknown":{"id":"b"}}]}`,
}

// The fast path decodes each body as encoding/json does, or gives up.
func TestRequestFastPathAsEncodingJSON(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, body := range fastBodies {
		if checkFastPath(t, []byte(body)) {
			fast++
		}
	}
	require.GreaterOrEqual(t, fast, 5, "the node's shapes take the fast path")
}

// checkFastPath compares the fast path with encoding/json on b, and
// reports whether the fast path decoded it.
func checkFastPath(t *testing.T, b []byte) bool {
	t.Helper()
	var got requestJSON
	if decodeRequestFast(b, &got) != nil {
		return false
	}
	var want requestJSON
	require.NoError(t, json.Unmarshal(b, &want), "the fast path decoded what encoding/json refuses: %s", b)
	require.Equal(t, want, got, "%s", b)
	return true
}

// FuzzRequestFastPath: whatever the body, the fast path agrees with
// encoding/json or gives up.
func FuzzRequestFastPath(f *testing.F) {
	for _, body := range fastBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFastPath(t, b) })
}
