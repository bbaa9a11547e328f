package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
)

func withStateQueues(q map[string]int) nodeOption {
	return func(c *web.Config) { c.StateQueues = q }
}

func TestStateGetSet(t *testing.T) {
	t.Parallel()
	n := newNode(t, withStateQueues(map[string]int{"orders": 0}))

	require.Equal(t, "version 0\n", n.run("state", "get", "--queue", "orders", "order-1").ok(t))
	require.Equal(t, "version 1\n", n.run("state", "set", "--queue", "orders", "--version", "0", "--value", `{"paid": true}`, "order-1").ok(t))
	require.Equal(t, "version 1\n{\"paid\":true}\n", n.run("state", "get", "--queue", "orders", "order-1").ok(t))
	require.JSONEq(t, `{"state": {"paid": true}, "version": 1}`, n.run("state", "get", "--queue", "orders", "--json", "order-1").ok(t))

	r := n.run("state", "set", "--queue", "orders", "--version", "0", "--value", "1", "order-1")
	require.Equal(t, ExitError, r.code, r.stderr)
	require.Contains(t, r.stderr, "version")

	require.Equal(t, "version 2\n", n.run("state", "set", "--queue", "orders", "--version", "1", "--base64", "AP8=", "order-1").ok(t))
	require.Equal(t, "version 2\nbase64:AP8=\n", n.run("state", "get", "--queue", "orders", "order-1").ok(t))
	require.Equal(t, "version 3\n", n.run("state", "set", "--queue", "orders", "--version", "2", "--delete", "order-1").ok(t))
	require.Equal(t, "version 3\ndeleted\n", n.run("state", "get", "--queue", "orders", "order-1").ok(t))

	for _, bad := range [][]string{
		{"state", "set", "--queue", "orders", "--value", "1", "x"},
		{"state", "set", "--queue", "orders", "--version", "0", "x"},
		{"state", "set", "--queue", "orders", "--version", "0", "--value", "not json", "x"},
		{"state", "set", "--queue", "orders", "--version", "0", "--value", "1", "--delete", "x"},
		{"state", "get", "--queue", "orders"},
		{"state", "frob"},
	} {
		require.Equal(t, ExitUsage, n.run(bad...).code, bad)
	}
	r = n.run("state", "get", "--queue", "mail", "x")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "not a stateful queue")
}

// orderly jobs get shows the state of an id of a stateful queue.
func TestJobsGetShowsState(t *testing.T) {
	t.Parallel()
	n := newNode(t, withStateQueues(map[string]int{"orders": 0}))
	n.run("state", "set", "--queue", "orders", "--version", "0", "--value", `{"paid":true}`, "order-1").ok(t)
	out := n.run("jobs", "get", "--queue", "orders", "order-1").ok(t)
	require.Contains(t, out, "state:")
	require.Contains(t, out, `version 1: {"paid":true}`)
}

// orderly state feed prints a page of the change feed and where to read on.
func TestStateFeed(t *testing.T) {
	t.Parallel()
	n := newNode(t, withStateQueues(map[string]int{"orders": 0}))
	ctx := context.Background()
	shards, err := n.store.Queues(ctx)
	require.NoError(t, err)
	for _, q := range shards {
		if q.Name != "orders" {
			continue
		}
		for sh := range q.Shards {
			// An owner's first call records the feed's bound, as a node does.
			l, _, err := n.store.AcquireShard(ctx, persistence.ShardRef{Queue: "orders", Shard: sh}, "n1", time.Minute)
			require.NoError(t, err)
			_, err = n.store.Advance(ctx, l, persistence.AdvanceRequest{NextSeq: 1, Stateful: true, FeedMaxLen: 10, CheckOutbox: true})
			require.NoError(t, err)
		}
	}
	n.run("state", "set", "--queue", "orders", "--version", "0", "--value", `{"paid":true}`, "order-1").ok(t)
	n.run("state", "set", "--queue", "orders", "--version", "1", "--delete", "order-1").ok(t)
	out := n.run("state", "feed", "--queue", "orders").ok(t)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Regexp(t, `^\d+-\d+ order-1 v1 \{"paid":true\}$`, lines[0])
	require.Regexp(t, `^\d+-\d+ order-1 v2 deleted$`, lines[1])
	pos := strings.Fields(lines[1])[0]
	require.Equal(t, "next "+pos, lines[2])
	require.Equal(t, "next "+pos+"\n", n.run("state", "feed", "--queue", "orders", "--from", pos).ok(t))

	for _, bad := range [][]string{
		{"state", "feed"},
		{"state", "feed", "--queue", "orders", "--limit", "0"},
		{"state", "feed", "--queue", "orders", "--wait", "1h"},
		{"state", "feed", "--queue", "orders", "x"},
	} {
		require.Equal(t, ExitUsage, n.run(bad...).code, bad)
	}
}
