package apiv1

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// FuzzDecodeStateWrite holds DecodeStateWrite to what it promises on
// any well-formed body: it never panics, its errors name a field, and what
// it accepts is an object of known fields, each once, whose state is a
// compact JSON value (or a delete, or base64 bytes) and whose version is
// an integer from 0.
func FuzzDecodeStateWrite(f *testing.F) {
	for _, s := range []string{
		`{"state": {"n": 1}, "version": 0}`,
		`{"state": null, "version": 3}`,
		`{"state_base64": "AP8=", "version": 2}`,
		`{"state": 1, "version": 1, "extra": 0}`,
		`{"state": 1, "state": 2, "version": 1}`,
		`{"state": 1, "Version": 1}`,
		`{"state": "caf` + "\xe9" + `", "version": 1}`,
		`{"state": 1, "version": 1e3}`,
		`{"state": 1, "version": 99999999999999999999}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		data, del, version, err := DecodeStateWrite(body)
		if err != nil {
			var fe *persistence.FieldError
			require.True(t, errors.As(err, &fe), "%v", err)
			require.Equal(t, -1, fe.Index)
			return
		}
		require.GreaterOrEqual(t, version, int64(0))
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &fields))
		for k := range fields {
			require.Contains(t, []string{"state", "state_base64", "version"}, k)
		}
		if del {
			require.Nil(t, data)
			require.JSONEq(t, "null", string(fields["state"]))
		} else if _, ok := fields["state"]; ok {
			require.True(t, json.Valid(data), "%q", data)
		}
	})
}
