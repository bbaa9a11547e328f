package web

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// TestPullJSONAsEncodingJSON: the pull routes' hand-written answers are
// byte for byte what encoding/json writes of their apiv1 types.
func TestPullJSONAsEncodingJSON(t *testing.T) {
	t.Parallel()
	jobs := []wire.Job{{ID: "a", RetryCount: -1, PerformAt: 1790000000.125,
		Payloads: []wire.Payload{{Data: []byte(`{"to":"a@b"}`), Score: 1.5}, {Data: []byte("\x00bin"), Score: 2}}},
		{ID: "é<\"x\">&", RetryCount: 2, Error: "boom\n", State: []byte(`{"n":1}`), Version: 3}}
	lease := &apiv1.PullLease{Lease: "9f2c", Deadline: 1790000030.5, Jobs: jobs}
	for _, a := range []apiv1.PullAnswered{{Accepted: true}, {Accepted: true, Lost: []string{"a", "b\u2028<&>"}},
		{Accepted: true, Next: lease}, {Accepted: true, Lost: []string{"x"}, Next: &apiv1.PullLease{Lease: "e", Jobs: []wire.Job{}}}} {
		got, err := appendPullAnswered(nil, &a)
		require.NoError(t, err)
		require.Equal(t, encodingJSON(t, a), string(got))
	}
	got, err := appendPullLease(nil, lease)
	require.NoError(t, err)
	require.Equal(t, encodingJSON(t, lease), string(got))
	for _, d := range []float64{0, -0.5, 1e-7, 1e-6, 123456789.001, 1e20, 1e21, 1.7976931348623157e308} {
		l := &apiv1.PullLease{Lease: "d", Deadline: d, Jobs: []wire.Job{}}
		got, err := appendPullLease(nil, l)
		require.NoError(t, err)
		require.Equal(t, encodingJSON(t, l), string(got), "deadline %v", d)
	}
}

// encodingJSON is v as writeJSON writes it, without the newline.
func encodingJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
