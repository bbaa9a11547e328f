package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// TestEnqueueDedupKey checks --dedup-key and the duplicates the command
// reports, from flags and from a file (docs/contract.md §3.12).
func TestEnqueueDedupKey(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	require.NoError(t, n.store.RegisterQueue(n.ctx, persistence.QueueSpec{Name: "dd", Shards: 2, DedupWindow: time.Hour}))
	args := []string{"enqueue", "--queue", "dd", "--id", "a", "--payload", "1", "--dedup-key", "pay-1"}
	require.Equal(t, "enqueued 1 job into dd\n", n.run(args...).ok(t))
	require.Equal(t, "enqueued 1 job into dd (1 duplicate: seen within the dedup window, not stored)\n", n.run(args...).ok(t))
	require.JSONEq(t, `{"enqueued": 1, "duplicates": 1}`, n.run(append(args, "--json")...).ok(t))
	require.Len(t, n.job("dd", "a").Payloads, 1)

	file := writeFile(t, "dd.jsonl", `{"id": "a", "payload": 2, "dedup_key": "pay-1"}
{"id": "b", "payload": 3, "dedup_key": "pay-1"}
{"id": "b", "payload": 4, "dedup_key": "pay-1"}
`)
	out := n.run("enqueue", "--queue", "dd", "--file", file).ok(t)
	require.Regexp(t, `^enqueued 3 jobs into dd in .* \(2 duplicates: seen within the dedup window, not stored\)\n$`, out)
	out = n.run("enqueue", "--queue", "dd", "--file", file, "--json").ok(t)
	require.Regexp(t, `"duplicates": 3`, out)

	r := n.run("enqueue", "--queue", "dd", "--file", file, "--dedup-key", "x")
	require.Contains(t, r.stderr, "--dedup-key is for one job from flags")
	r = n.run("enqueue", "--queue", "dd", "--id", "c", "--dedup-key", string(make([]byte, persistence.MaxDedupKeyBytes+1)))
	require.Contains(t, r.stderr, "--dedup-key: 513 bytes, more than the limit of 512")
}
