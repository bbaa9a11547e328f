package persistence_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// A dedup key is at most MaxDedupKeyBytes of UTF-8 (docs/contract.md
// §3.12), and emitted jobs carry none.
func TestValidateDedupKey(t *testing.T) {
	ok := []persistence.NewJob{{ID: "a"}, {ID: "a", DedupKey: strings.Repeat("k", persistence.MaxDedupKeyBytes)}}
	require.NoError(t, persistence.ValidateJobs(ok, 0))
	var fe *persistence.FieldError
	err := persistence.ValidateJobs([]persistence.NewJob{{ID: "a"}, {ID: "b", DedupKey: strings.Repeat("k", persistence.MaxDedupKeyBytes+1)}}, 0)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "dedup_key", fe.Field)
	require.Equal(t, 1, fe.Index)
	require.ErrorAs(t, persistence.ValidateJobs([]persistence.NewJob{{ID: "a", DedupKey: "\xff"}}, 0), &fe)
	require.Equal(t, "dedup_key", fe.Field)

	err = persistence.ValidateEmit(persistence.Emit{Queue: "q", Job: persistence.NewJob{ID: "a", DedupKey: "k"}}, 0)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "emit.dedup_key", fe.Field)
}
