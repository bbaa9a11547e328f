package cli

import (
	"context"
	"regexp"
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
	require.Regexp(t, `(?m)^state: +\{"paid":true\}$`, out)
	require.Regexp(t, `(?m)^version: +1$`, out)
	require.NotContains(t, out, "timer:")
	// No job: the state remains, and the lookup says so.
	require.Contains(t, out, "its state remains")
	require.Regexp(t, `(?m)^\{"paid":true\}$`, n.run("state", "get", "--queue", "orders", "order-1").ok(t), "state get prints the same state")

	// A processed id with a timer: its time, absolute and relative.
	require.NoError(t, n.store.Enqueue(n.ctx, "orders", []persistence.NewJob{newJob("order-2", `"created"`)}))
	shard := persistence.ShardOf("order-2", ordersShards)
	lease, _, err := n.store.AcquireShard(n.ctx, persistence.ShardRef{Queue: "orders", Shard: shard}, "node-x", time.Minute)
	require.NoError(t, err)
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Fetch: 10, NextSeq: 1, Stateful: true})
	require.NoError(t, err)
	at := time.Now().Add(30 * time.Minute).Truncate(time.Second)
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Stateful: true,
		StateWrites: []persistence.StateWrite{{ID: "order-2", Data: []byte(`{"status":"created"}`)}},
		TimerWrites: []persistence.TimerWrite{{ID: "order-2", At: at}}})
	require.NoError(t, err)
	out = n.run("jobs", "get", "--queue", "orders", "order-2").ok(t)
	require.Regexp(t, `(?m)^state: +\{"status":"created"\}$`, out)
	require.Regexp(t, `(?m)^timer: +`+regexp.QuoteMeta(at.UTC().Format("2006-01-02T15:04:05Z"))+` \(in (29m\d+s|30m0s)\)$`, out)
	require.Contains(t, out, "its state remains")

	// A queued id with state: no note.
	require.NoError(t, n.store.Enqueue(n.ctx, "orders", []persistence.NewJob{newJob("order-1", `"paid"`)}))
	require.NotContains(t, n.run("jobs", "get", "--queue", "orders", "order-1").ok(t), "note:")

	// A deleted state keeps its version, as orderly state get shows it.
	n.run("state", "set", "--queue", "orders", "--version", "1", "--delete", "order-1").ok(t)
	out = n.run("jobs", "get", "--queue", "orders", "order-1").ok(t)
	require.Regexp(t, `(?m)^state: +deleted$`, out)
	require.Regexp(t, `(?m)^version: +2$`, out)
	require.Equal(t, "version 2\ndeleted\n", n.run("state", "get", "--queue", "orders", "order-1").ok(t))

	// An id whose only trace is a deleted state is found, with the version
	// the next set names.
	n.run("state", "set", "--queue", "orders", "--version", "0", "--value", "1", "order-9").ok(t)
	n.run("state", "set", "--queue", "orders", "--version", "1", "--delete", "order-9").ok(t)
	out = n.run("jobs", "get", "--queue", "orders", "order-9").ok(t)
	require.Regexp(t, `(?m)^queued: +nothing$`, out)
	require.Regexp(t, `(?m)^state: +deleted$`, out)
	require.Regexp(t, `(?m)^version: +2$`, out)
	require.Regexp(t, `(?m)^note: +.*its state was deleted, its version remains \(orderly state set --version 2 sets it again\)$`, out)
	n.run("state", "set", "--queue", "orders", "--version", "2", "--value", "3", "order-9").ok(t)
	r := n.run("jobs", "get", "--queue", "orders", "never")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "HTTP 404")
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
