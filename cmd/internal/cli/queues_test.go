package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

func (n *node) paused(queue string) bool {
	n.t.Helper()
	ctl, err := n.store.Controls(n.ctx, queue)
	require.NoError(n.t, err)
	return ctl[0].Paused
}

// docs/contract.md §6.5, §9: orderly queues pause|resume Q, shown by
// orderly queues and orderly stats.
func TestQueuesPauseResume(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	require.Equal(t, "orders paused\n", n.run("queues", "pause", "orders").ok(t))
	require.True(t, n.paused("orders"))
	require.False(t, n.paused("mail"))
	require.Contains(t, n.run("queues").ok(t), "orders (paused)")
	require.Contains(t, n.run("stats").ok(t), "orders (paused)")
	require.NotContains(t, n.run("queues", "list").ok(t), "mail (paused)")
	require.Contains(t, n.run("queues", "--json").ok(t), `"paused": true`)
	require.JSONEq(t, `{"paused": false}`, n.run("queues", "resume", "--queue", "orders", "--json").ok(t))
	require.False(t, n.paused("orders"))
	require.NotContains(t, n.run("queues", "--json").ok(t), `"paused":true`)

	r := n.run("queues", "pause", "nope")
	require.Equal(t, ExitError, r.code, r.stderr)
	require.Contains(t, r.stderr, "unknown queue")
	r = n.run("queues", "pause")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--queue is required")
	r = n.run("queues", "pause", "orders", "mail")
	require.Equal(t, ExitUsage, r.code)
	r = n.run("queues", "pasue", "orders")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "pause")
	require.Contains(t, n.run("queues", "--help").ok(t), "perform-all-now")
}

// docs/contract.md §6.5: orderly periodic lists the periodic jobs.
func TestPeriodicCommand(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	require.Equal(t, "no periodic jobs\n", n.run("periodic").ok(t))
	next := persistence.UnixSeconds(t0)
	n = newNode(t, func(c *web.Config) {
		c.Periodic = func(context.Context) ([]apiv1.Periodic, error) {
			return []apiv1.Periodic{{Name: "hb", Queue: "orders", Schedule: "@every 1m", ID: "x", NextTick: &next}}, nil
		}
	})
	require.Equal(t, "NAME  QUEUE   SCHEDULE   ID  LAST TICK  NEXT TICK\nhb    orders  @every 1m  x   -          2023-11-14T22:13:20Z\n", n.run("periodic").ok(t))
	require.Contains(t, n.run("periodic", "--json").ok(t), `"next_tick": 1700000000`)
}
