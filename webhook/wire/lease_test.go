package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// oldLease is a lease as encoding/json decodes it, each job through
// Job.UnmarshalJSON: what UnmarshalLease must decode alike.
type oldLease struct {
	ID       string  `json:"lease"`
	Deadline float64 `json:"deadline"`
	Jobs     []Job   `json:"jobs"`
}

// leaseSeeds are lease bodies: every job of testRequest (payloads as JSON
// objects, strings, base64, with headers; stateful jobs of every kind),
// payloads that expire, members in other cases, unknown members, null and
// empty lists, and bodies that must be refused.
func leaseSeeds(t testing.TB) []string {
	jobs, err := json.Marshal(testRequest().Jobs)
	require.NoError(t, err)
	return []string{
		`{"lease":"l1","deadline":1795680448.5,"jobs":` + string(jobs) + `}`,
		`{"lease":"l2","deadline":1,"jobs":[{"id":"e","retry_count":-1,"perform_at":2,"payloads":[{"payload":"x","score":1,"expires_at":1700000600.25},{"payload": { "a" : [1, 2] },"score":2,"headers":{"k":"v"}}]}]}`,
		`{"LEASE":"l3","Deadline":2,"Jobs":[{"ID":"c","Payloads":[{"Payload_Base64":"AP8=","SCORE":3}],"delivery":"d1","other":{"x":[1]}}],"extra":true}`,
		`{"lease":"l4","deadline":3,"jobs":[]}`,
		`{"lease":"l5","deadline":3,"jobs":null}`,
		`{"lease":"l6","deadline":3}`,
		`{"lease":"l7","deadline":3,"jobs":[null,{"id":"n","payloads":null}]}`,
		`{"lease":"l8","jobs":[{"id":"s","state":{"a": 1},"version":3,"payloads":[]},{"id":"d","state":null,"deleted":true,"version":2,"payloads":[]},{"id":"b","state_base64":"AP8=","version":1,"timer":true,"payloads":[]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[{"score":1}]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[{"payload":1,"payload_base64":"AA==","score":1}]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[{"payload_base64":"!","score":1}]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","state_base64":"!","payloads":[]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[]},{"id":1}]}`,
		`{"lease":"bad","deadline":"x","jobs":[]}`,
		`{"lease":"bad","jobs":{}}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[{"payload":"x","score":"1"}]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[{"payload":"x","expires_at":"1"}]}]}`,
		`{"lease":"bad","jobs":[{"id":"a","payloads":[{"payload":"x","headers":{"k":1}}]}]}`,
		`{"lease":"bad","jobs":[`,
		`[]`,
		`null`,
		``,
	}
}

// checkLease checks that UnmarshalLease decodes body as encoding/json
// decodes it into a struct of Jobs: the same lease, or an error for both;
// and alike as the "next" member of an answer.
func checkLease(t *testing.T, body string) {
	var old oldLease
	oldErr := json.Unmarshal([]byte(body), &old)
	l, err := UnmarshalLease([]byte(body), false)
	if oldErr != nil {
		require.Error(t, err, "%s", body)
	} else {
		require.NoError(t, err, "%s", body)
		require.Equal(t, old, oldLease(*l), "%s", body)
	}
	answer := []byte(`{"next":` + body + `}`)
	if !json.Valid(answer) {
		return
	}
	var oldNext struct {
		Next *oldLease `json:"next"`
	}
	oldErr = json.Unmarshal(answer, &oldNext)
	l, err = UnmarshalLease(answer, true)
	switch {
	case oldErr != nil:
		require.Error(t, err, "%s", answer)
	case oldNext.Next == nil:
		require.NoError(t, err, "%s", answer)
		require.Nil(t, l, "%s", answer)
	default:
		require.NoError(t, err, "%s", answer)
		require.Equal(t, *oldNext.Next, oldLease(*l), "%s", answer)
	}
}

// UnmarshalLease decodes every kind of job and payload, and refuses bad
// input, as encoding/json decoding each Job does.
func TestUnmarshalLeaseAsJobs(t *testing.T) {
	t.Parallel()
	for _, body := range leaseSeeds(t) {
		checkLease(t, body)
	}
	l, err := UnmarshalLease([]byte(leaseSeeds(t)[0]), false)
	require.NoError(t, err)
	require.Equal(t, normalize(testRequest()).Jobs, normalize(Request{Jobs: l.Jobs}).Jobs)
	for _, answer := range []string{`{}`, `{"next":null}`, `{"next":null,"done":1}`} {
		l, err := UnmarshalLease([]byte(answer), true)
		require.NoError(t, err)
		require.Nil(t, l)
	}
}

// FuzzUnmarshalLease checks that UnmarshalLease and encoding/json decoding
// each Job accept the same bodies and decode them alike.
func FuzzUnmarshalLease(f *testing.F) {
	for _, s := range leaseSeeds(f) {
		f.Add([]byte(s))
	}
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// A second "jobs" member decodes into the jobs of the first,
		// which Job.UnmarshalJSON replaces but a one-pass decoding does
		// not: the node never sends one, and UnmarshalLease does not
		// promise it.
		if lower := bytes.ToLower(body); bytes.Count(lower, []byte("jobs")) > 1 || bytes.Contains(lower, []byte(`\u`)) {
			t.Skip()
		}
		checkLease(t, string(body))
	})
}

// BenchmarkUnmarshalLease compares UnmarshalLease with encoding/json
// decoding each Job, on a lease of 5 jobs of one payload each.
func BenchmarkUnmarshalLease(b *testing.B) {
	jobs := make([]Job, 5)
	for i := range jobs {
		jobs[i] = Job{ID: "id-" + string(rune('a'+i)), RetryCount: -1, PerformAt: 1795680448.5,
			Payloads: []Payload{{Data: []byte(`{"n":12345,"s":"blank job"}`), Score: 1795680448.25}}}
	}
	js, err := json.Marshal(jobs)
	require.NoError(b, err)
	body := []byte(`{"lease":"l-1","deadline":1795680478.5,"jobs":` + string(js) + `}`)
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := UnmarshalLease(body, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("per-job", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var l oldLease
			if err := json.Unmarshal(body, &l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
