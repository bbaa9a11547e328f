package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/spool"
)

// payloads returns the queued payloads of id in queue, in score order.
func (n *node) payloads(queue, id string) []string {
	n.t.Helper()
	j := n.job(queue, id)
	if j == nil {
		return nil
	}
	var out []string
	for _, p := range j.Payloads {
		out = append(out, string(p.Data))
	}
	return out
}

// TestEnqueueSpool checks orderly enqueue --spool: a job the node cannot
// take (503, unreachable) is spooled with a word on stderr and exit 0, a
// refusal for good is not, the next enqueue sends what waits first (so an
// id keeps its order), and spool status reports what waits.
func TestEnqueueSpool(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	dir := filepath.Join(t.TempDir(), "spool")
	enq := func(id, payload string, extra ...string) result {
		return n.run(append([]string{"enqueue", "--queue", "orders", "--id", id, "--payload", payload, "--spool", dir}, extra...)...)
	}
	require.Equal(t, "enqueued 1 job into orders\n", enq("a", "1").ok(t))

	n.setOnEnqueue(func(int64) int { return 503 })
	r := enq("a", "2")
	require.Empty(t, r.ok(t))
	require.Contains(t, r.stderr, "spooled 1 job in "+dir)
	require.Contains(t, r.stderr, "injected failure")
	r = enq("a", "3", "--json")
	require.JSONEq(t, `{"enqueued": 0, "duplicates": 0, "spooled": 1}`, r.ok(t))

	out := n.run("spool", "status", dir).ok(t)
	require.Contains(t, out, "2 jobs waiting in 2 spooled calls")
	require.Contains(t, out, "oldest spooled")
	var st spoolStatusJSON
	require.NoError(t, json.Unmarshal([]byte(n.run("spool", "status", dir, "--json").ok(t)), &st))
	require.Equal(t, 2, st.Jobs)
	require.NotNil(t, st.Oldest)

	// Unreachable: spooled too, without a request.
	r = n.runWith(runOpts{env: map[string]string{"ORDERLY_HTTP": unreachable}}, "enqueue", "--queue", "orders", "--id", "b", "--spool", dir)
	require.Contains(t, r.stderr, "spooled 1 job")
	require.Equal(t, ExitOK, r.code)

	n.setOnEnqueue(nil)
	require.Equal(t, "enqueued 1 job into orders\n", enq("a", "4").ok(t))
	require.Equal(t, []string{"1", "2", "3", "4"}, n.payloads("orders", "a"))
	require.Equal(t, []string{`""`}, n.payloads("orders", "b"))
	require.Contains(t, n.run("spool", "status", dir).ok(t), "0 jobs waiting")

	// A refusal for good is an error, and nothing is spooled.
	r = n.run("enqueue", "--queue", "nope", "--id", "c", "--spool", dir)
	require.Equal(t, ExitError, r.code)
	require.NotContains(t, r.stderr, "spooled")
	require.Contains(t, n.run("spool", "status", dir).ok(t), "0 jobs waiting")
}

// TestEnqueueFileSpool checks --file with --spool: batches the node
// cannot take, and every one after them, are spooled; the lines before
// were enqueued.
func TestEnqueueFileSpool(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	dir := t.TempDir()
	n.setOnEnqueue(func(num int64) int {
		if num >= 2 {
			return 502
		}
		return 0
	})
	lines := `{"id":"a","payload":1}` + "\n" + `{"id":"a","payload":2}` + "\n" + `{"id":"b","payload":3}` + "\n"
	r := n.runWith(runOpts{stdin: strings.NewReader(lines)}, "enqueue", "--queue", "orders", "--file", "-", "--batch", "1", "--spool", dir, "--json")
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.ok(t)), &out))
	require.EqualValues(t, 1, out["enqueued"])
	require.EqualValues(t, 2, out["spooled"])
	require.Contains(t, r.stderr, "spooled 2 jobs")
	require.EqualValues(t, 2, n.enqueues.Load(), "after a failure the batches are spooled without a request")

	n.setOnEnqueue(nil)
	r = n.run("spool", "drain", dir)
	require.Equal(t, "sent 2 jobs from "+dir+"; nothing waits\n", r.ok(t))
	require.Equal(t, []string{"1", "2"}, n.payloads("orders", "a"))
	require.Equal(t, []string{"3"}, n.payloads("orders", "b"))
}

// TestSpoolDrain checks orderly spool drain: exit 1 while the node cannot
// take the jobs (they stay), or while another process owns the directory,
// or when the node refuses jobs for good (kept aside); exit 0 once
// everything is sent.
func TestSpoolDrain(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	dir := t.TempDir()
	n.setOnEnqueue(func(int64) int { return 503 })
	n.run("enqueue", "--queue", "orders", "--id", "a", "--payload", "1", "--spool", dir).ok(t)
	r := n.run("spool", "drain", dir)
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "0 jobs sent; 1 job still wait in "+dir)

	owner, err := spool.Open(dir, spool.Options{})
	require.NoError(t, err)
	r = n.run("spool", "drain", dir)
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "in use by another process")
	require.Contains(t, r.stderr, "process "+strconv.Itoa(os.Getpid()))
	require.NoError(t, owner.Close())

	n.setOnEnqueue(func(int64) int { return 404 }) // e.g. the queue is gone
	r = n.run("spool", "drain", dir, "--json")
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.stderr, "rejected.seg")
	require.Contains(t, n.run("spool", "status", dir).ok(t), "1 job refused for good")

	n.setOnEnqueue(nil)
	n.setOnEnqueue(func(int64) int { return 503 })
	n.run("enqueue", "--queue", "orders", "--id", "b", "--payload", "2", "--spool", dir).ok(t)
	n.setOnEnqueue(nil)
	require.JSONEq(t, `{"sent": 1, "rejected": 0, "waiting": 0}`, n.run("spool", "drain", dir, "--json").ok(t))
	require.Equal(t, []string{"2"}, n.payloads("orders", "b"))

	require.Equal(t, ExitUsage, n.run("spool", "drain").code)
	require.Equal(t, ExitUsage, n.run("spool", "stat", dir).code)
}
