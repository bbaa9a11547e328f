package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEnqueueExpiry checks --expires-in and --expires-at, and expires_in
// on a JSONL line (docs/contract.md §3.15): the stored payload carries the
// expiry; both flags together, or a negative delay, are refused.
func TestEnqueueExpiry(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	for _, tc := range []struct {
		name string
		args []string
		want time.Time
	}{
		{"in duration", []string{"--expires-in", "5m"}, t0.Add(5 * time.Minute)},
		{"in seconds", []string{"--expires-in", "1.5"}, t0.Add(1500 * time.Millisecond)},
		{"at RFC 3339", []string{"--expires-at", "2023-11-14T22:15:00Z"}, t0.Add(100 * time.Second)},
		{"at unix seconds", []string{"--expires-at", "1700000100.5"}, t0.Add(100500 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "exp " + tc.name
			n.run(append([]string{"enqueue", "--queue", "mail", "--id", id}, tc.args...)...).ok(t)
			j := n.job("mail", id)
			require.NotNil(t, j)
			require.True(t, tc.want.Equal(j.Payloads[0].ExpiresAt), "expires_at %s, want %s", j.Payloads[0].ExpiresAt, tc.want)
			require.Nil(t, j.Payloads[0].Headers)
		})
	}
	file := writeFile(t, "exp.jsonl", `{"id": "f", "payload": 1, "expires_in": "1m"}
{"id": "g", "payload": 2, "expires_at": 1700000100}
`)
	n.run("enqueue", "--queue", "mail", "--file", file).ok(t)
	require.True(t, t0.Add(time.Minute).Equal(n.job("mail", "f").Payloads[0].ExpiresAt))
	require.True(t, t0.Add(100*time.Second).Equal(n.job("mail", "g").Payloads[0].ExpiresAt))

	// jobs get shows it.
	out := n.run("jobs", "get", "--queue", "mail", "g").ok(t)
	require.Contains(t, out, "expires #1:")
	require.Contains(t, out, "2023-11-14T22:15:00Z")

	r := n.run("enqueue", "--queue", "mail", "--id", "x", "--expires-in", "1s", "--expires-at", "1")
	require.Contains(t, r.stderr, "give --expires-in or --expires-at, not both")
	r = n.run("enqueue", "--queue", "mail", "--id", "x", "--expires-in", "-1s")
	require.Contains(t, r.stderr, "--expires-in: must not be negative")
	r = n.run("enqueue", "--queue", "mail", "--file", file, "--expires-in", "1s")
	require.Contains(t, r.stderr, "--expires-in is for one job from flags")
}
