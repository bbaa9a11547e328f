package persistence_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

func TestShardRefStringAndCompare(t *testing.T) {
	require.Equal(t, "orders/12", persistence.ShardRef{Queue: "orders", Shard: 12}.String())
	refs := []persistence.ShardRef{{Queue: "b", Shard: 0}, {Queue: "a", Shard: 10}, {Queue: "a", Shard: 2}, {Queue: "a.b", Shard: 0}, {Queue: "a", Shard: 2}}
	slices.SortFunc(refs, persistence.ShardRef.Compare)
	require.Equal(t, []persistence.ShardRef{{Queue: "a", Shard: 2}, {Queue: "a", Shard: 2}, {Queue: "a", Shard: 10}, {Queue: "a.b", Shard: 0}, {Queue: "b", Shard: 0}}, refs,
		"by queue in byte order, then by shard number (10 after 2)")
	require.Zero(t, persistence.ShardRef{Queue: "q", Shard: 1}.Compare(persistence.ShardRef{Queue: "q", Shard: 1}))
}
