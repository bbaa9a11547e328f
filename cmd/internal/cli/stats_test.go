package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// busyNode is a node whose queues have a bit of everything: queued fresh
// and failed jobs, a job in flight, processed and failed counts, the
// morgue, and lag.
func busyNode(t *testing.T, opts ...nodeOption) *node {
	t.Helper()
	n := newNode(t, opts...)
	// orders: one job dies, then three wait for 3m4s.
	n.kill("orders", "boom", newJob("dead", "x"))
	late := t0.Add(-184 * time.Second)
	n.enqueue("orders",
		persistence.NewJob{ID: "a1", PerformAt: late},
		persistence.NewJob{ID: "a2", PerformAt: late.Add(time.Second)},
		persistence.NewJob{ID: "a3", PerformAt: late.Add(2 * time.Second)})

	// mail (one shard): x1 fails and waits for its retry, x2 succeeds, x3
	// is in flight, x5 has waited 1.2s.
	ctx := n.ctx
	n.enqueue("mail", persistence.NewJob{ID: "x1", PerformAt: t0.Add(-10 * time.Second)})
	lease, _, err := n.store.AcquireShard(ctx, persistence.ShardRef{Queue: "mail"}, "node-a", time.Minute)
	require.NoError(t, err)
	res, err := n.store.Advance(ctx, lease, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, "x1", res.Batch.Jobs[0].ID)
	n.enqueue("mail", persistence.NewJob{ID: "x2", PerformAt: t0.Add(-5 * time.Second)})
	res, err = n.store.Advance(ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, Fetch: 1, MaxRetryCount: 25,
		Failures: []persistence.Failure{{ID: "x1", Error: "later", RetryAt: t0.Add(time.Minute)}}})
	require.NoError(t, err)
	require.Equal(t, "x2", res.Batch.Jobs[0].ID)
	n.enqueue("mail", persistence.NewJob{ID: "x3", PerformAt: t0.Add(-2 * time.Second)})
	res, err = n.store.Advance(ctx, lease, persistence.AdvanceRequest{Settle: 2, NextSeq: 3, Fetch: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, "x3", res.Batch.Jobs[0].ID)
	n.enqueue("mail", persistence.NewJob{ID: "x5", PerformAt: t0.Add(-1200 * time.Millisecond)})
	return n
}

func TestStats(t *testing.T) {
	t.Parallel()
	n := busyNode(t)

	out := n.run("stats").ok(t)
	require.Equal(t, `QUEUE   LENGTH  FRESH  RETRIES  MORGUE  LAG   BUSY  PROCESSED  FAILED  SNOOZED  DISCARDED  CANCELLED  EXPIRED
mail    2       1      1        0       1.2s  1     1          1       0        0          0          0
orders  3       3      0        1       3m4s  0     0          1       0        0          0          0
`, out)

	out = n.run("stats", "--queue", "orders").ok(t)
	require.Equal(t, `QUEUE   LENGTH  FRESH  RETRIES  MORGUE  LAG   BUSY  PROCESSED  FAILED  SNOOZED  DISCARDED  CANCELLED  EXPIRED
orders  3       3      0        1       3m4s  0     0          1       0        0          0          0
`, out)

	// --json: the API's answer.
	var ans struct {
		Queues []map[string]any `json:"queues"`
	}
	out = n.run("stats", "--json").ok(t)
	require.Regexp(t, `(?s)^\{\n  "queues": \[\n    \{\n      "name": "mail",\n      "shards": 1,\n      "length": 2,`, out, "the API's key order")
	require.NoError(t, json.Unmarshal([]byte(out), &ans), out)
	require.Len(t, ans.Queues, 2)
	require.InDelta(t, 1.2, ans.Queues[0]["lag"], 1e-6)
	delete(ans.Queues[0], "lag")
	require.Equal(t, map[string]any{"name": "mail", "shards": 1.0, "length": 2.0, "fresh": 1.0, "retries": 1.0,
		"morgue_length": 0.0, "busy": 1.0, "processed": 1.0, "failed": 1.0, "snoozed": 0.0, "discarded": 0.0, "paused": false,
		"oldest_due": persistence.UnixSeconds(t0.Add(-1200 * time.Millisecond))}, ans.Queues[0])
	require.Equal(t, "orders", ans.Queues[1]["name"])

	out = n.run("stats", "--json", "--queue", "orders").ok(t)
	require.NoError(t, json.Unmarshal([]byte(out), &ans), out)
	require.Len(t, ans.Queues, 1)
	require.Equal(t, "orders", ans.Queues[0]["name"])
	require.Equal(t, 184.0, ans.Queues[0]["lag"])

	// An unknown queue, a bad name, bad usage.
	r := n.run("stats", "--queue", "nope")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly stats: unknown queue \"nope\" (field queue; HTTP 404)\n", r.stderr)
	r = n.run("stats", "--queue", "../x")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "orderly stats: --queue: \"../x\": only letters")
	r = n.run("stats", "orders")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, `orderly stats: unexpected argument "orders" (see orderly stats --help)`)
	r = n.run("stats", "--queue")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "flag --queue needs a value")
}

func TestStatsEmptyAndHostile(t *testing.T) {
	t.Parallel()
	// A node that answers with no queues, then with a hostile name.
	srv := fakeNode(t, `{"queues":[]}`)
	out := exec(runOpts{}, "stats", "--http", srv).ok(t)
	require.Equal(t, "no queues\n", out)

	srv = fakeNode(t, `{"queues":[{"name":"evil\u001b[2J\tq","lag":1e300,"length":1,"snoozed":4,"discarded":5,"cancelled":6,"expired":7}]}`)
	out = exec(runOpts{}, "stats", "--http", srv).ok(t)
	require.Equal(t, `QUEUE           LENGTH  FRESH  RETRIES  MORGUE  LAG         BUSY  PROCESSED  FAILED  SNOOZED  DISCARDED  CANCELLED  EXPIRED
evil\x1b[2J\tq  1       0      0        0       106751d23h  0     0          0       4        5          6          7
`, out)

	srv = fakeNode(t, `{"queues": 7}`)
	r := exec(runOpts{}, "stats", "--http", srv)
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "orderly stats: the node's answer is not the expected JSON")
}

func TestStatsToken(t *testing.T) {
	t.Parallel()
	n := newNode(t, withToken("s3cret"))
	r := n.run("stats")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly stats: missing or invalid bearer token (HTTP 401): the node needs its token: pass --http-token or set ORDERLY_HTTP_TOKEN\n", r.stderr)
	// A wrong token is named as the one refused.
	r = n.runWith(runOpts{env: map[string]string{"ORDERLY_HTTP_TOKEN": "guess"}}, "stats")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly stats: missing or invalid bearer token (HTTP 401): the node refused the token of --http-token (or ORDERLY_HTTP_TOKEN): give the one it was started with\n", r.stderr)
	out := n.runWith(runOpts{env: map[string]string{"ORDERLY_HTTP_TOKEN": "s3cret"}}, "stats").ok(t)
	require.Contains(t, out, "orders")
}
