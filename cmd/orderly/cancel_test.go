package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// TestCancelAcrossNodes cancels, through the HTTP API (then the CLI) of a
// node that does not serve it, an id whose webhook call blocks on another
// node (docs/contract.md §3.13): the receiver's request ends, the id's
// payloads (those in flight and one queued meanwhile) go to the morgue
// (dropped with --delete), the id is never delivered again, and every other
// id is acknowledged.
func TestCancelAcrossNodes(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	block := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(block) }) })
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		for _, j := range c.Request.Jobs {
			if strings.HasPrefix(j.ID, "victim") {
				return webhooktest.Answer{Hold: block}
			}
		}
		return webhooktest.Answer{}
	})
	// The call timeout is far longer than the test's waits: only the
	// cancel ends the blocked calls.
	cfg := fmt.Sprintf(`
queues:
  - name: orders
    shards: 4
    retry: {policy: linear, base: 20ms}
    handler: {type: http, url: %q, timeout: 120s}
`, rcv.URL)
	opts, nodes := startTrio(t, "cx", nodetest.Options{Redis: "redis://" + srv.Addr() + "/0", Config: cfg}, nil)
	store := directStore(t, srv.Addr())

	var others []string
	for i := range 12 {
		others = append(others, fmt.Sprintf(`{"id": "o%d", "payload": %d}`, i, i))
	}
	cancelOn := func(victim string) *nodetest.Node {
		t.Helper()
		enqueue(t, nodes[0], fmt.Sprintf(`[{"id": %q, "payload": 1, "score": 1}, {"id": %q, "payload": 2, "score": 2}, %s]`,
			victim, victim, strings.Join(others, ", ")))
		eventually(t, victim+" is in flight at the receiver", func() bool { return len(rcv.JobsOf(victim)) > 0 })
		enqueue(t, nodes[0], fmt.Sprintf(`[{"id": %q, "payload": 3, "score": 3}]`, victim))
		owner := ownerOf(t, nodes[0], rcv, victim)
		for i, o := range opts {
			if o.Name != owner {
				return nodes[i]
			}
		}
		t.Fatalf("no node other than %s", owner)
		return nil
	}
	cut := func(victim string) bool {
		for _, c := range rcv.Calls() {
			for _, j := range c.Request.Jobs {
				if j.ID == victim && c.Cut {
					return true
				}
			}
		}
		return false
	}

	// Through the HTTP API, mode kill.
	other := cancelOn("victim1")
	code, out := post(t, other, "/api/v1/queues/orders/jobs/victim1/actions/cancel", "")
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, map[string]any{"mode": "kill", "killed": 1.0, "deleted": 0.0, "in_flight": true}, out)
	eventually(t, "the receiver's request for victim1 ends", func() bool { return cut("victim1") })
	eventually(t, "victim1's payloads are in the morgue", func() bool {
		page, err := store.ListMorgue(t.Context(), "orders", persistence.ListOptions{Min: "victim1", Max: "victim1"})
		require.NoError(t, err)
		return len(page.Entries) == 1 && page.Entries[0].PayloadCount == 3 && page.Entries[0].Error == "cancelled"
	})

	// Through the CLI, mode delete.
	other = cancelOn("victim2")
	code, stdout, stderr := orderly(t, other, "jobs", "cancel", "orders", "victim2", "--delete")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "cancelled victim2: 1 queued payloads deleted; the call in flight was told to stop\n", stdout)
	eventually(t, "the receiver's request for victim2 ends", func() bool { return cut("victim2") })

	eventually(t, "everything else is acknowledged, nothing is left", func() bool {
		st, err := store.Stats(t.Context(), "orders")
		require.NoError(t, err)
		return st[0].Length == 0 && st[0].Busy == 0 && st[0].Cancelled == 2
	})
	page, err := store.ListMorgue(t.Context(), "orders", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1, "victim2's payloads were dropped")
	for _, v := range []string{"victim1", "victim2"} {
		require.Len(t, rcv.JobsOf(v), 1, "%s is never delivered again", v)
	}
	for i := range 12 {
		acked := false
		for _, c := range rcv.Calls() {
			for _, j := range c.Request.Jobs {
				acked = acked || j.ID == fmt.Sprint("o", i) && !c.Cut && c.Answer.Status == 0 && c.Answer.Hold == nil
			}
		}
		require.True(t, acked, "o%d is acknowledged", i)
	}
	code, _ = post(t, nodes[1], "/api/v1/queues/orders/jobs/victim1/actions/cancel", "")
	require.Equal(t, 404, code, "nothing of victim1 is left")
}

// ownerOf returns the name of the node whose call to rcv holds id: the
// owner of the shard its Orderly-Delivery names.
func ownerOf(t *testing.T, n *nodetest.Node, rcv *webhooktest.Receiver, id string) string {
	t.Helper()
	shard := -1
	for _, c := range rcv.Calls() {
		for _, j := range c.Request.Jobs {
			if j.ID == id {
				parts := strings.Split(c.Delivery(), "/")
				require.Len(t, parts, 4, c.Delivery())
				var err error
				shard, err = strconv.Atoi(parts[1])
				require.NoError(t, err)
			}
		}
	}
	require.GreaterOrEqual(t, shard, 0)
	code, body := n.Do("GET", "/api/v1/cluster", nil)
	require.Equal(t, 200, code, "%s", body)
	var cl apiv1.Cluster
	require.NoError(t, json.Unmarshal(body, &cl))
	for _, s := range cl.Shards {
		if s.Queue == "orders" && s.Shard == shard {
			return s.Owner
		}
	}
	t.Fatalf("no owner of orders/%d in %s", shard, body)
	return ""
}

// TestNodeQuietResume quiets and resumes a node through its HTTP API and
// the CLI (docs/operations.md): a quiet node is not ready, says so in
// GET /api/v1/cluster, and serves again once resumed.
func TestNodeQuietResume(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{})
	n.WaitReady()
	code, out := post(t, n, "/api/v1/node/quiet", "")
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, map[string]any{"node": n.Name, "quiet": true}, out)
	code, body := n.Do("GET", "/readyz", nil)
	require.Equal(t, 503, code, "%s", body)
	code, body = n.Do("GET", "/api/v1/cluster", nil)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"quiet":true`)

	code, stdout, stderr := orderly(t, n, "node", "resume")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, n.Name+" resumed\n", stdout)
	n.WaitReady()
	code, stdout, stderr = orderly(t, n, "node", "quiet", "--json")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, fmt.Sprintf(`{"node": %q, "quiet": true}`, n.Name), stdout)
	code, stdout, stderr = orderly(t, n, "node", "resume")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, n.Name+" resumed\n", stdout)
	n.WaitReady()
	code, _, _ = orderly(t, n, "node", "sleep")
	require.Equal(t, 2, code)
}
