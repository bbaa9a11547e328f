package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/contract.md §10: headers from --header and from JSONL lines reach
// the store with their payload; jobs get shows them.
func TestEnqueueHeaders(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.run("enqueue", "--queue", "orders", "--id", "o1", "--payload", `"x"`, "--score", "1",
		"--header", "tenant=acme", "--header", "traceparent=00-ab-cd-01").ok(t)
	require.Equal(t, map[string]string{"tenant": "acme", "traceparent": "00-ab-cd-01"}, n.job("orders", "o1").Payloads[0].Headers)

	path := writeFile(t, "jobs.jsonl", `{"id": "o1", "payload": "y", "score": 2}
{"id": "o2", "headers": {"k": "v=w"}}
`)
	n.run("enqueue", "--queue", "orders", "--file", path).ok(t)
	require.Nil(t, n.job("orders", "o1").Payloads[1].Headers)
	require.Equal(t, map[string]string{"k": "v=w"}, n.job("orders", "o2").Payloads[0].Headers)

	out := squash(n.run("jobs", "get", "--queue", "orders", "o1").ok(t))
	require.Contains(t, out, `payloads: 2: "x", "y"`)
	require.Contains(t, out, "headers #1: tenant=acme traceparent=00-ab-cd-01")
	require.NotContains(t, out, "headers #2")

	// Bad headers are usage errors naming the flag or the line.
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--id", "x", "--header", "novalue"}, `"novalue": give K=V`},
		{[]string{"--id", "x", "--header", "=v"}, "--header: a key must not be empty"},
		{[]string{"--id", "x", "--header", "a=1", "--header", "a=2"}, `"a" given more than once`},
		{[]string{"--file", path, "--header", "a=1"}, "--header is for one job from flags"},
	} {
		r := n.run(append([]string{"enqueue", "--queue", "orders"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, c.args)
		require.Contains(t, r.stderr, c.msg, c.args)
	}
	r := n.run("enqueue", "--queue", "orders", "--file", writeFile(t, "bad.jsonl", `{"id": "z", "headers": {"": "v"}}`))
	require.Contains(t, r.stderr, ":1: headers: a key must not be empty")
}
