package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// TestEnqueuePriority checks --priority and the "priority" field of a JSONL
// line, and that bad values are refused before anything is sent
// (docs/contract.md §3.16).
func TestEnqueuePriority(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	require.NoError(t, n.store.RegisterQueue(n.ctx, persistence.QueueSpec{Name: "pq", Shards: 1}))
	require.Equal(t, "enqueued 1 job into pq\n", n.run("enqueue", "--queue", "pq", "--id", "a", "--priority", "3").ok(t))
	require.Equal(t, 3, n.job("pq", "a").Priority)
	require.Equal(t, "enqueued 1 job into pq\n", n.run("enqueue", "--queue", "pq", "--id", "b", "--priority", "1").ok(t))
	require.Equal(t, 0, n.job("pq", "b").Priority, "priority 1 is the default")
	file := writeFile(t, "pq.jsonl", `{"id": "c", "payload": 1, "priority": 4}
`)
	n.run("enqueue", "--queue", "pq", "--file", file).ok(t)
	require.Equal(t, 4, n.job("pq", "c").Priority)
	for _, bad := range []string{"0", "5", "x"} {
		r := n.run("enqueue", "--queue", "pq", "--id", "d", "--priority", bad)
		require.Contains(t, r.stderr, "--priority", bad)
	}
	bad := writeFile(t, "bad.jsonl", `{"id": "e", "priority": 2.5}
`)
	r := n.run("enqueue", "--queue", "pq", "--file", bad)
	require.Contains(t, r.stderr, "must be an integer from 1 to 4")
	require.Nil(t, n.job("pq", "d"))
	require.Nil(t, n.job("pq", "e"))
}
