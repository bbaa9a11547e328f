package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%d", i)
	}
	return out
}

func count(owners []string) map[string]int {
	out := map[string]int{}
	for _, o := range owners {
		out[o]++
	}
	return out
}

func TestPlacementIsBalanced(t *testing.T) {
	for _, c := range []struct{ shards, members int }{{5, 3}, {8, 3}, {16, 4}, {300, 3}, {3, 5}, {64, 7}} {
		got := count(placement("orders", numbers(c.shards), names(c.members)))
		limit := (c.shards + c.members - 1) / c.members
		total := 0
		for m, n := range got {
			require.NotEmpty(t, m)
			require.LessOrEqual(t, n, limit, "%+v", c)
			require.GreaterOrEqual(t, n, c.shards/c.members, "%+v: %v", c, got)
			total += n
		}
		require.Equal(t, c.shards, total)
	}
	require.Equal(t, []string{"", ""}, placement("orders", numbers(2), nil))
}

func TestPlacementIsDeterministic(t *testing.T) {
	a := placement("q", numbers(64), []string{"c", "a", "b"})
	b := placement("q", numbers(64), []string{"b", "c", "a"})
	require.Equal(t, a, b, "the order of the view does not matter")
}

// A join or a leave moves the shards it must, and few others.
func TestPlacementMovesLittle(t *testing.T) {
	moved := func(a, b []string) int {
		n := 0
		for i := range a {
			if a[i] != b[i] {
				n++
			}
		}
		return n
	}
	before := placement("q", numbers(256), names(3))
	after := placement("q", numbers(256), names(4))
	require.Equal(t, 64, count(after)["node-3"])
	require.LessOrEqual(t, moved(before, after), 64+16, "joining moves about a quarter")

	gone := placement("q", numbers(256), []string{"node-0", "node-2"})
	require.LessOrEqual(t, moved(before, gone), count(before)["node-1"]+16, "leaving moves about the leaver's shards")
}

func TestAssignmentHonoursEligibility(t *testing.T) {
	members := []Member{
		{Name: "a", State: StateAlive, Meta: Meta{Queues: []string{"q", "r"}}},
		{Name: "b", State: StateAlive, Meta: Meta{Queues: []string{"q"}}},
		{Name: "c", State: StateDraining, Meta: Meta{Queues: []string{"q", "r"}, Draining: true}},
		{Name: "d", State: StateAlive, Meta: Meta{Queues: []string{"q", "r"}, Unhealthy: true}},
		{Name: "e", State: StateDead, Meta: Meta{Queues: []string{"q", "r"}}},
	}
	require.Equal(t, []string{"a", "b"}, eligible(members, "q"))
	require.Equal(t, []string{"a"}, eligible(members, "r"))
	queues := map[string][]int{"q": numbers(16), "r": numbers(4)}
	a := assignment("a", queues, members)
	b := assignment("b", queues, members)
	require.Len(t, a, 16+4-len(b))
	require.Len(t, b, 8, "q is split evenly between a and b")
	for _, ref := range b {
		require.Equal(t, "q", ref.Queue, "b does not serve r")
	}
	require.Empty(t, assignment("c", queues, members))

	// After a reshard the queue's shards have other numbers: they are
	// split the same way.
	moved := map[string][]int{"q": {16, 17, 18, 19, 20, 21}}
	a, b = assignment("a", moved, members), assignment("b", moved, members)
	require.Len(t, a, 3)
	require.Len(t, b, 3)
	for _, ref := range append(a, b...) {
		require.GreaterOrEqual(t, ref.Shard, 16)
	}
}
