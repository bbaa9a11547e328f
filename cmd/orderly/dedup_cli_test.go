package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
)

// TestEnqueueDedupWindow runs a node whose configuration gives a queue a
// dedup_window and enqueues with the binary's --dedup-key: the second
// send, after the first was processed, is a duplicate (docs/contract.md
// §3.12).
func TestEnqueueDedupWindow(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{Config: `
queues:
  - name: orders
    shards: 2
    dedup_window: 1h
    handler: {type: log}
`})
	n.WaitReady()
	args := []string{"enqueue", "--queue", "orders", "--id", "order-1", "--payload", `{"paid":true}`, "--dedup-key", "pay-1"}
	code, stdout, stderr := orderly(t, n, args...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "enqueued 1 job into orders\n", stdout)
	eventually(t, "the log handler runs it", func() bool { return bytes.Contains([]byte(n.Logs()), []byte("job_id=order-1")) })

	code, stdout, stderr = orderly(t, n, args...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "enqueued 1 job into orders (1 duplicate: seen within the dedup window, not stored)\n", stdout)
	code, stdout, stderr = orderly(t, n, "enqueue", "--queue", "orders", "--id", "order-1", "--dedup-key", "pay-2")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "enqueued 1 job into orders\n", stdout)
}
