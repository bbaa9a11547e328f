package redisstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// A shape reads back as written; the registry's plain count (every
// release's spelling) is generation 1; bad spellings are errors.
func TestShapeSpelling(t *testing.T) {
	t.Parallel()
	four := persistence.QueueShape{Current: persistence.ShardRange{Gen: 1, Count: 4}}
	seven := nextShape(four, 7)
	require.Equal(t, persistence.QueueShape{
		Current: persistence.ShardRange{Gen: 2, Base: 4, Count: 7},
		From:    persistence.ShardRange{Gen: 1, Base: 0, Count: 4},
	}, seven)
	two := nextShape(persistence.QueueShape{Current: seven.Current}, 2)
	require.Equal(t, persistence.ShardRange{Gen: 3, Base: 0, Count: 2}, two.Current, "the lowest free numbers")
	for _, sh := range []persistence.QueueShape{four, seven, {Current: seven.Current}, two} {
		got, err := parseShape(sh.String())
		require.NoError(t, err, sh.String())
		require.Equal(t, sh, got)
	}
	require.Equal(t, "4", four.String())
	for _, bad := range []string{"", "0", "x", "1,2", "2,4,7;2,0,4", "2,0,7;1,0,4", "0,0,3", "2,4,0", "2,4,7;"} {
		_, err := parseShape(bad)
		require.Error(t, err, bad)
	}
}
