package persistence_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// docs/contract.md §10: the limits of a payload's headers, with the field
// named.
func TestValidateHeaders(t *testing.T) {
	many := map[string]string{}
	for i := range persistence.MaxHeaders {
		many[strconv.Itoa(i)] = "v"
	}
	require.NoError(t, persistence.ValidateHeaders(many, 0))
	many["one-more"] = "v"
	big := map[string]string{"k": strings.Repeat("x", persistence.MaxHeaderBytes-1)}
	require.NoError(t, persistence.ValidateHeaders(big, 0))
	big["k"] += "x"
	for name, c := range map[string]struct {
		h      map[string]string
		reason string
	}{
		"33 entries": {many, "33 entries, more than the limit of 32"},
		"8 KiB + 1":  {big, "8193 bytes of keys and values, more than the limit of 8192"},
		"empty key":  {map[string]string{"": "v"}, "a key must not be empty"},
		"bad UTF-8":  {map[string]string{"k": "\xff"}, `key "k": not valid UTF-8`},
	} {
		err := persistence.ValidateJobs([]persistence.NewJob{{ID: "a"}, {ID: "b", Headers: c.h}}, 0)
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe, name)
		require.Equal(t, "headers", fe.Field, name)
		require.Equal(t, 1, fe.Index, name)
		require.Equal(t, c.reason, fe.Reason, name)
		require.ErrorIs(t, err, persistence.ErrInvalid, name)
	}
	require.NoError(t, persistence.ValidateHeaders(nil, -1))
}
