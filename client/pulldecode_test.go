package client_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// pullJobs are the jobs of the leases of the decoding tests: payloads by
// value and in base64, headers, expiry, an error, stateful jobs (with a
// state, in base64, deleted) and a timer's.
const pullJobs = `[{"id":"a","retry_count":-1,"perform_at":1.5,"payloads":[{"payload":{"x": 1},"score":1,"headers":{"k":"v"}},` +
	`{"payload_base64":"AP8=","score":2,"expires_at":1767225600.5}]},` +
	`{"id":"b\u00e9","retry_count":2,"perform_at":3,"error":"boom","payloads":[{"payload":"","score":0}]},` +
	`{"id":"s1","retry_count":-1,"perform_at":4,"state":{"n":1},"version":3,"payloads":[]},` +
	`{"id":"s2","retry_count":-1,"perform_at":4,"state_base64":"AAE=","version":1,"payloads":[{"payload":1,"score":1}]},` +
	`{"id":"s3","retry_count":-1,"perform_at":4,"state":null,"deleted":true,"version":7,"timer":true,"payloads":[]}]`

// A lease decodes as encoding/json decodes a PullLease, whatever the
// order or case of its members; an answer's next lease as
// encoding/json decodes it, wherever "next" is, and bad bodies fail.
func TestPullLeaseDecoding(t *testing.T) {
	t.Parallel()
	leases := []string{
		`{"lease":"l1","deadline":4102444800.123,"jobs":` + pullJobs + `}`,
		` { "lease" : "l1" , "deadline" : 4102444800 , "jobs" : ` + pullJobs + ` } `,
		`{"jobs":` + pullJobs + `,"lease":"l1","deadline":4102444800}`,
		`{"deadline":4102444800,"lease":"l1","jobs":` + pullJobs + `}`,
		`{"Lease":"l1","deadline":1,"jobs":` + pullJobs + `}`,
		`{"lease":"l1","deadline":1,"jobs":[],"queue":"q","shard":2}`,
		`{"lease":"l1","deadline":1,"jobs":null}`,
		`{"lease":"l1","deadline":1}`,
		`{}`,
	}
	for _, body := range leases {
		var want client.PullLease
		require.NoError(t, json.Unmarshal([]byte(body), &want), body)
		got, err := client.DecodeLease([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, &want, got, body)

		for _, answer := range []string{
			`{"accepted":true,"next":` + body + `}`,
			`{"accepted":true,"lost":["x","y"],"next":` + body + "}\n",
			`{"next":` + body + `,"accepted":true}`,
			`{"accepted":true,"next":` + body + `,"next":null}`,
			`{"accepted":true,"next":null,"next":` + body + `}`,
		} {
			var want struct{ Next *client.PullLease }
			require.NoError(t, json.Unmarshal([]byte(answer), &want), answer)
			got, err := client.DecodeNext([]byte(answer))
			require.NoError(t, err, answer)
			require.Equal(t, want.Next, got, answer)
		}
	}
	got, err := client.DecodeNext([]byte(`{"accepted":true}`))
	require.NoError(t, err)
	require.Nil(t, got)
	for _, bad := range []string{
		`{"lease":"l1","deadline":1,"jobs":[{"id":"a","payloads":[{"payload":1,"payload_base64":"AA=="}]}]}`,
		`{"lease":"l1","deadline":1,"jobs":[{"id":"a"}]`,
		`{"lease":"l1","deadline":"x","jobs":[]}`,
		`[]`,
	} {
		_, err := client.DecodeLease([]byte(bad))
		require.Error(t, err, bad)
		_, err = client.DecodeNext([]byte(`{"accepted":true,"next":` + bad + `}`))
		require.Error(t, err, bad)
	}
	// The jobs are those the node sent.
	l, err := client.DecodeLease([]byte(leases[0]))
	require.NoError(t, err)
	require.Len(t, l.Jobs, 5)
	require.Equal(t, []byte(`{"x":1}`), l.Jobs[0].Payloads[0].Data)
	require.Equal(t, wire.Job{ID: "s2", RetryCount: -1, PerformAt: 4, Stateful: true, State: []byte{0, 1}, Version: 1,
		Payloads: []wire.Payload{{Data: []byte("1"), Score: 1}}}, l.Jobs[3])
}
