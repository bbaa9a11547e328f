package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

func TestQueuesList(t *testing.T) {
	t.Parallel()
	n := jobsNode(t)
	n.kill("mail", "boom", newJob("m", `1`))
	require.Equal(t, `QUEUE   SHARDS  QUEUED  IN FLIGHT  MORGUE
mail    1       0       0          1
orders  4       3       0          0
`, n.run("queues").ok(t))
	require.Equal(t, n.run("queues").stdout, n.run("queues", "list").stdout)
	require.Contains(t, n.run("queues", "--json").ok(t), `"name": "orders"`)
}

func TestQueueActions(t *testing.T) {
	t.Parallel()
	n := jobsNode(t)
	require.Equal(t, "updated 1\n", n.run("queues", "perform-all-now", "--queue", "orders").ok(t))
	require.True(t, n.job("orders", "order-2").PerformAt.Equal(t0))

	// A failed job in mail: f fails once and waits for its retry.
	n.enqueue("mail", newJob("f", `1`))
	lease, _, err := n.store.AcquireShard(n.ctx, persistence.ShardRef{Queue: "mail", Shard: 0}, "test", time.Minute)
	require.NoError(t, err)
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1})
	require.NoError(t, err)
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 25,
		Failures: []persistence.Failure{{ID: "f", Error: "boom", RetryAt: t0.Add(time.Hour)}}})
	require.NoError(t, err)
	require.NoError(t, n.store.ReleaseShard(n.ctx, lease))
	out := n.runWith(runOpts{stdinTTY: true, stdin: strings.NewReader("yes\n")}, "queues", "kill-failed", "--queue", "mail").ok(t)
	require.Equal(t, "killed 1\n", out)
	require.Equal(t, []string{"f"}, n.morgueIDs("mail"))
	r := n.run("queues", "kill-failed", "--queue", "orders")
	require.Equal(t, ExitUsage, r.code, "kill-failed without a terminal needs --yes")
	require.Contains(t, r.stderr, "confirm with --yes")
	r = n.runWith(runOpts{stdinTTY: true, stdin: strings.NewReader("n\n")}, "queues", "delete-failed", "--queue", "orders")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "Delete every failed job of orders? This cannot be undone. [y/N]")
	require.Contains(t, r.stderr, "not confirmed; nothing changed")
	out = n.runWith(runOpts{stdinTTY: true, stdin: strings.NewReader("y\n")}, "queues", "kill-failed", "--queue", "orders").ok(t)
	require.Equal(t, "killed 0\n", out, "orders has no failed job")
	require.Equal(t, "deleted 0\n", n.run("queues", "delete-failed", "--queue", "orders", "--yes").ok(t))
	require.JSONEq(t, `{"killed": 0}`, n.run("queues", "kill-failed", "--queue", "orders", "--yes", "--json").ok(t))
	require.Len(t, n.queued("orders"), 3, "fresh jobs stay")

	r = exec(runOpts{}, "queues", "kil-failed")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "did you mean kill-failed?")
	r = exec(runOpts{}, "queues", "perform-all-now")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--queue is required")
}
