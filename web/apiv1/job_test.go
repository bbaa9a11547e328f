package apiv1

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/internal/jsonscan"
)

var now = time.Unix(1_700_000_000, 0)

// decodeEach is DecodeJobs the long way: json.Valid, then DecodeJob and
// Store on each element.
func decodeEach(body []byte) ([]persistence.NewJob, error) {
	if !json.Valid(body) {
		return nil, ErrMalformedJSON
	}
	var jobs []persistence.NewJob
	err := jsonscan.EachElement(body, func(i int, val []byte) error {
		j, err := DecodeJob(val, i, 0)
		if err != nil {
			return err
		}
		pj, err := j.Store(now, i)
		jobs = append(jobs, pj)
		return err
	})
	return jobs, err
}

func TestDecodeJobs(t *testing.T) {
	t.Parallel()
	body := []byte(`[{"id": "a", "payload": {"x": [1, 2]}, "score": 1.5, "headers": {"k": "v"}},
		{"id": "b", "payload_base64": "AP8=", "perform_in": 30}, {"id": "c"}]`)
	jobs, err := DecodeJobs(body, 0, now)
	require.NoError(t, err)
	want, err := decodeEach(body)
	require.NoError(t, err)
	require.Equal(t, want, jobs)
	require.Equal(t, `{"x":[1,2]}`, string(jobs[0].Payload), "a JSON payload is stored compact")
	require.Equal(t, []byte{0, 0xff}, jobs[1].Payload)
	require.Equal(t, []byte(EmptyPayload), jobs[2].Payload)
	require.Equal(t, now.Add(30*time.Second), jobs[1].PerformAt)

	jobs, err = DecodeJobs([]byte(`[]`), 0, now)
	require.NoError(t, err)
	require.Empty(t, jobs)
}

// The first bad job is the error, unless the body is malformed anywhere.
func TestDecodeJobsErrors(t *testing.T) {
	t.Parallel()
	var fe *persistence.FieldError
	_, err := DecodeJobs([]byte(`[{"id": "a"}, {"id": "b", "bogus": 1}, {"id": "c", "id": "d"}]`), 0, now)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, persistence.FieldError{Field: "bogus", Index: 1, Reason: "unknown field (known: " + JobFields + ")"}, *fe)

	_, err = DecodeJobs([]byte(`[{"id": "a", "id": "b"}]`), 0, now)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "given more than once", fe.Reason)

	_, err = DecodeJobs([]byte(`[1]`), 0, now)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, persistence.FieldError{Index: 0, Reason: "must be a JSON object, got a number"}, *fe)

	for _, body := range []string{
		`[{"id": "b", "bogus": 1}, {"id": }]`,
		`[{"id": "a"}] trailing`,
		`[{"id": "a"}`,
	} {
		_, err := DecodeJobs([]byte(body), 0, now)
		require.ErrorIs(t, err, ErrMalformedJSON, body)
	}
}

// FuzzDecodeJobs holds the one pass to the long way: the same jobs, or
// the same error (malformed JSON, or the same field error).
func FuzzDecodeJobs(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`[{"id": "a", "payload": {"x": [1, 2.5, "s"],  "y": null}, "score": 3}]`,
		`[{"id": "a", "payload_base64": "AP8=", "perform_in": 1.5}, {"id": "a", "payload": "AP8="}]`,
		`[{"id": "a/b%c", "perform_at": 1700000000}, {"id": "\u00e9\ud83d\ude00", "payload": "\u2028<&>"}]`,
		`[{"id": "a", "id": "b"}]`,
		`[{"ID": "a"}, {"id": "\ud800"}]`,
		"[{\"id\": \"\xff\"}]",
		`[{"id": "a"},]`,
		`[{"id": "a", "headers": {"k": 1}}, {"id": "b", "headers": null}]`,
		`[{"id": "a", "bogus": [1, {"x": "}"}]}, 2]`,
		`[{"\u0069d": "escaped name"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if jsonscan.KindOf(body) != "an array" {
			return // DecodeJobs' precondition; the caller checks the rest
		}
		got, err := DecodeJobs(body, 0, now)
		want, werr := decodeEach(body)
		if errors.Is(werr, ErrMalformedJSON) {
			require.ErrorIs(t, err, ErrMalformedJSON, "%q", body)
			return
		}
		if werr != nil {
			require.Equal(t, werr, err, "%q", body)
			return
		}
		require.NoError(t, err, "%q", body)
		require.Equal(t, want, got)
	})
}

// A job's dedup_key goes through MarshalJSON and DecodeJob unchanged.
func TestNewJobDedupKeyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "pay-7731", "ünï \"q\" <&>"} {
		b, err := NewJob{ID: "a", DedupKey: key}.MarshalJSON()
		require.NoError(t, err)
		if key == "" {
			require.NotContains(t, string(b), "dedup_key")
		}
		j, err := DecodeJob(b, -1, 0)
		require.NoError(t, err)
		require.Equal(t, key, j.DedupKey)
		pj, err := j.Store(now, 0)
		require.NoError(t, err)
		require.Equal(t, key, pj.DedupKey)
	}
	_, err := DecodeJob([]byte(`{"id": "a", "dedup_key": "\udc00"}`), 0, 0)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "dedup_key", fe.Field)
}

// A job's expires_at or expires_in goes through MarshalJSON and DecodeJob
// unchanged, and Store makes it an expiry (docs/contract.md §3.15).
func TestNewJobExpiryRoundTrip(t *testing.T) {
	t.Parallel()
	at, in := 1700000600.5, 90.0
	for _, tc := range []struct {
		job  NewJob
		want time.Time
	}{
		{NewJob{ID: "a", ExpiresAt: &at}, time.UnixMilli(1700000600500)},
		{NewJob{ID: "b", ExpiresIn: &in}, now.Add(90 * time.Second)},
		{NewJob{ID: "c"}, time.Time{}},
	} {
		b, err := tc.job.MarshalJSON()
		require.NoError(t, err)
		j, err := DecodeJob(b, -1, 0)
		require.NoError(t, err)
		require.Equal(t, tc.job, j)
		pj, err := j.Store(now, 0)
		require.NoError(t, err)
		require.True(t, tc.want.Equal(pj.ExpiresAt), "%s: %v, want %v", tc.job.ID, pj.ExpiresAt, tc.want)
	}
	_, err := NewJob{ID: "d", ExpiresAt: &at, ExpiresIn: &in}.Store(now, 3)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "expires_in", fe.Field)
	require.Equal(t, 3, fe.Index)
}

// A job's priority goes through MarshalJSON and DecodeJob unchanged; 0
// (none) is not written.
func TestNewJobPriorityRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []int{0, 1, 2, 4} {
		b, err := NewJob{ID: "a", Priority: p}.MarshalJSON()
		require.NoError(t, err)
		if p == 0 {
			require.NotContains(t, string(b), "priority")
		}
		j, err := DecodeJob(b, -1, 0)
		require.NoError(t, err)
		require.Equal(t, p, j.Priority)
		pj, err := j.Store(now, 0)
		require.NoError(t, err)
		require.Equal(t, p, pj.Priority)
	}
}
