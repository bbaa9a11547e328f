package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// jobsNode is a node whose orders queue holds order-1 (due now, two
// payloads), order-2 (due in an hour) and the id "a/b".
func jobsNode(t *testing.T) *node {
	t.Helper()
	n := newNode(t)
	later := newJob("order-2", `{"sku":2}`)
	later.PerformAt = t0.Add(time.Hour)
	n.enqueue("orders", newJob("order-1", `"x"`), newJob("order-1", `"y"`), later, newJob("a/b", `1`))
	return n
}

func TestJobsList(t *testing.T) {
	t.Parallel()
	n := jobsNode(t)
	out := n.run("jobs", "list", "--queue", "orders").ok(t)
	require.Equal(t, `ID       PERFORM AT            RETRIES  ERROR  PAYLOADS
a/b      2023-11-14T22:13:20Z  -1       -      1
order-1  2023-11-14T22:13:20Z  -1       -      2: "x", "y"
order-2  2023-11-14T23:13:20Z  -1       -      {"sku":2}
`, out)

	out = n.run("jobs", "list", "--queue", "orders", "--limit", "2").ok(t)
	m := regexp.MustCompile(`(?m)^next: (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	out = n.run("jobs", "list", "--queue", "orders", "--limit", "2", "--cursor", m[1]).ok(t)
	require.Contains(t, out, "order-2")
	require.NotContains(t, out, "order-1")

	// The default order is perform_at: bounds are times.
	out = n.run("jobs", "list", "--queue", "orders", "--max", "1700000000").ok(t)
	require.Contains(t, out, "order-1")
	require.NotContains(t, out, "order-2")

	out = n.run("jobs", "list", "--queue", "orders", "--order", "id", "--min", "order-2", "--max", "order-2", "--json").ok(t)
	var page apiv1.JobPage
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Jobs, 1)
	require.Equal(t, "order-2", page.Jobs[0].ID)

	require.Equal(t, "no jobs queued in mail\n", n.run("jobs", "list", "--queue", "mail").ok(t))
	require.Equal(t, "no match\n", n.run("jobs", "list", "--queue", "orders", "--error", "boom").ok(t))
	r := n.run("jobs", "list", "--queue", "orders", "--order", "score")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--order must be id, perform_at or retry_count")
}

func TestJobsGetAndActions(t *testing.T) {
	t.Parallel()
	n := jobsNode(t)
	out := squash(n.run("jobs", "get", "--queue", "orders", "order-1").ok(t))
	require.Contains(t, out, "queued: due 2023-11-14T22:13:20Z, retry count -1, 2 payloads")
	require.Contains(t, out, `payloads: 2: "x", "y"`)
	require.Contains(t, out, "in flight: no")

	out = n.run("jobs", "perform-now", "--queue", "orders", "order-2").ok(t)
	require.Equal(t, "due now order-2\n", out)
	require.True(t, n.job("orders", "order-2").PerformAt.Equal(t0))

	out = n.run("jobs", "kill", "--queue", "orders", "a/b").ok(t)
	require.Equal(t, "killed a/b\n", out)
	require.Nil(t, n.job("orders", "a/b"))
	require.Equal(t, []string{"a/b"}, n.morgueIDs("orders"))
	// Only in the morgue: found, with its entry.
	out = squash(n.run("jobs", "get", "--queue", "orders", "a/b").ok(t))
	require.Contains(t, out, "queued: nothing")
	require.Contains(t, out, "morgue: 1 payloads, last 2023-11-14T22:13:20Z, first 2023-11-14T22:13:20Z")
	require.Contains(t, out, "error: killed")

	out = n.run("jobs", "delete", "--queue", "orders", "--json", "order-1").ok(t)
	require.JSONEq(t, `{"deleted": 1}`, out)
	require.Nil(t, n.job("orders", "order-1"))

	// Nothing queued: exit 1, the node's message; JSON errors with --json.
	r := n.run("jobs", "kill", "--queue", "orders", "order-1")
	require.Equal(t, ExitError, r.code)
	require.Equal(t, "orderly jobs kill: job \"order-1\" is not queued in \"orders\" (HTTP 404)\n", r.stderr)
	r = n.run("jobs", "get", "--queue", "orders", "--json", "order-1")
	require.Equal(t, ExitError, r.code)
	require.Empty(t, r.stdout)
	var ej errorJSON
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &ej), r.stderr)
	require.Equal(t, 404, ej.Status)
	require.Equal(t, "jobs get", ej.Command)
	require.Equal(t, ExitError, ej.ExitCode)

	// In flight only: 409, and the call is untouched.
	lease, _, err := n.store.AcquireShard(n.ctx, persistence.ShardRef{Queue: "mail", Shard: 0}, "node-x", time.Minute)
	require.NoError(t, err)
	n.enqueue("mail", newJob("m", `1`))
	_, err = n.store.Advance(n.ctx, lease, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1})
	require.NoError(t, err)
	r = n.run("jobs", "perform-now", "--queue", "mail", "m")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "is in flight and has nothing queued")
	require.Contains(t, r.stderr, "HTTP 409")
	out = squash(n.run("jobs", "get", "--queue", "mail", "m").ok(t))
	require.Contains(t, out, "in flight: on node-x since 2023-11-14T22:13:20Z")
	require.Contains(t, out, "queued: nothing")

	out = n.run("processing", "mail").ok(t)
	require.Equal(t, `SHARD  NODE    SINCE                 ID  RETRIES  PAYLOADS
0      node-x  2023-11-14T22:13:20Z  m   -1       1
`, out)
	require.Equal(t, "nothing in flight in orders\n", n.run("processing", "--queue", "orders").ok(t))
	out = n.run("processing", "--json", "mail").ok(t)
	var p apiv1.Processing
	require.NoError(t, json.Unmarshal([]byte(out), &p))
	require.Len(t, p.Batches, 1)
}

func TestJobsUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"jobs"}, "missing command: list, get, finished, delete, perform-now, kill or cancel"},
		{[]string{"jobs", "kil"}, `unknown command "kil"; did you mean kill?`},
		{[]string{"jobs", "kill", "--queue", "orders"}, "give the job's id"},
		{[]string{"jobs", "kill", "a"}, "--queue is required"},
		{[]string{"jobs", "get", "--queue", "orders", "a", "b"}, "give one id, got 2"},
		{[]string{"jobs", "delete", "--queue", "orders", strings.Repeat("x", 513)}, "id "},
		{[]string{"processing"}, "--queue is required"},
		{[]string{"processing", "a", "b"}, `unexpected argument "b"`},
		{[]string{"jbos"}, `did you mean jobs?`},
	} {
		r := exec(runOpts{env: map[string]string{"ORDERLY_HTTP": unreachable}}, c.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.msg, c.args)
	}
	r := exec(runOpts{}, "jobs", "kil", "--json")
	require.Equal(t, ExitUsage, r.code)
	var ej errorJSON
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &ej), r.stderr)
	require.Contains(t, ej.Error, "did you mean kill?")
	for _, cmd := range []string{"list", "get", "delete", "perform-now", "kill"} {
		out := exec(runOpts{}, "jobs", cmd, "--help").stdout
		require.True(t, strings.HasPrefix(out, "Usage: orderly jobs "+cmd), out)
		require.Contains(t, out, "\nFlags:\n")
	}
	require.Contains(t, exec(runOpts{}, "jobs", "--help").stdout, "orderly jobs perform-now --queue Q ID")
	require.Contains(t, exec(runOpts{}, "processing", "--help").stdout, "Usage: orderly processing --queue Q")
}

// squash joins the words of s with single spaces, for output whose column
// widths do not matter.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
