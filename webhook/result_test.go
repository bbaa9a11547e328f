package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An answer's "result" maps ids to any JSON value, compacted; anything
// else is a bad answer.
func TestAnswerResult(t *testing.T) {
	t.Parallel()
	a, err := decodeAnswer([]byte(`{"result": {"a": {"total": 3, "ok": true}, "b": null, "c": "done", "d": [1, 2]}}`))
	require.NoError(t, err)
	require.Equal(t, `{"total":3,"ok":true}`, string(a.Result["a"]))
	require.Equal(t, `null`, string(a.Result["b"]))
	require.Equal(t, `"done"`, string(a.Result["c"]))
	require.Equal(t, `[1,2]`, string(a.Result["d"]))
	a, err = decodeAnswer([]byte(`{"failed": {"x": "boom"}, "result": {"a": 1}}`))
	require.NoError(t, err)
	require.Equal(t, "boom", a.Failed["x"])
	require.Equal(t, `1`, string(a.Result["a"]))
	for _, bad := range []string{`{"result": []}`, `{"result": 1}`, `{"result": null}`, `{"result": "a"}`} {
		_, err := decodeAnswer([]byte(bad))
		require.ErrorIs(t, err, errBadAnswer, bad)
	}
}
