package redisstore

import (
	"strconv"
	"testing"
	"time"

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

	// A reshard that ended leaves the generation it drained named, with
	// the end; entries written up to relayGrace after it may have been
	// relayed into that generation.
	end := time.UnixMilli(1_800_000_000_000)
	ended := endedShape(seven, end)
	require.Equal(t, "2,4,7|1,0,4@1800000000000", ended)
	got, ret, err := parseShapeRetired(ended)
	require.NoError(t, err)
	require.Equal(t, persistence.QueueShape{Current: seven.Current}, got)
	require.Equal(t, retiredGen{gen: four.Current, endMs: end.UnixMilli()}, ret)
	require.True(t, ret.holds("1799999999999-3"))
	require.True(t, ret.holds(strconv.FormatInt(end.Add(relayGrace).UnixMilli(), 10)+"-0"))
	require.False(t, ret.holds(strconv.FormatInt(end.Add(relayGrace).UnixMilli()+1, 10)+"-0"))
	require.False(t, retiredGen{}.holds("1-0"))

	for _, bad := range []string{"", "0", "x", "1,2", "2,4,7;2,0,4", "2,0,7;1,0,4", "0,0,3", "2,4,0", "2,4,7;",
		"2,4,7|1,0,4", "2,4,7|1,0,4@x", "2,4,7|2,0,4@1", "2,4,7|1,4,4@1", "2,4,7;1,0,4|1,0,4@1", "2,4,7|"} {
		_, err := parseShape(bad)
		require.Error(t, err, bad)
	}
}
