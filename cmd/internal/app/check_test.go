package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// orderly check and orderly --check validate a configuration without
// running a node: exit 0 with a summary, or 1 with every problem.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte(`node:
  http_token: tok-SECRET
queues:
  - name: emails
    shards: 4
    handler: {type: http, url: 'https://u:pw-SECRET@hooks.example/p', secret: sig-SECRET}
`), 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("queues:\n  - name: a\n    shards: 0\n    handler: {type: http}\n    rate_limit: {per_second: 0}\n"+
		"periodic:\n  - {name: p, queue: nope, schedule: \"@every 1s\", id: x}\n  - {name: q, queue: a, schedule: \"* * *\", id: y}\n"+
		"  - {name: r, queue: a, schedule: \"@every 0s\", id: z}\n"), 0o600))

	for _, args := range [][]string{{"check", "--config", good}, {"--config", good, "--check"}} {
		code, done, out, errOut := run(args...)
		require.True(t, done, args)
		require.Zero(t, code, "%v: %s", args, errOut)
		require.Contains(t, out, "configuration OK ("+good+")")
		require.Contains(t, out, "queue emails: 4 shards, batch_size 1, handler http https://u:REDACTED@hooks.example/p, signed")
		require.NotContains(t, out, "SECRET")
	}
	for _, args := range [][]string{{"check", "--config", bad}, {"--check", "--config", bad}} {
		code, done, out, errOut := run(args...)
		require.True(t, done, args)
		require.Equal(t, 1, code, args)
		require.Empty(t, out)
		require.Contains(t, errOut, "orderly check: ")
		require.Contains(t, errOut, "queues[0].shards")
		require.Contains(t, errOut, "queues[0].handler.url: required for handler type http")
		require.Contains(t, errOut, "queues[0].rate_limit.per_second: must be a positive number")
		require.Contains(t, errOut, `periodic[0].queue: "nope" is not a queue of this file`)
		require.Contains(t, errOut, `periodic[1].schedule: schedule "* * *"`)
		require.Contains(t, errOut, `periodic[2].schedule: schedule "@every 0s": the period 0s is shorter than the minimum of 1s`)
	}
	// The effective configuration as a file, secrets left out or
	// redacted; checked again, it is valid.
	code, _, out, errOut := run("check", "--config", good, "--print-config")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "# http_token (ORDERLY_HTTP_TOKEN)\n")
	require.Contains(t, out, "      secret: REDACTED # secret, not shown: set it again\n")
	require.Contains(t, out, "  - name: emails\n    shards: 4\n")
	require.Contains(t, out, "  shutdown_timeout: 25s\n")
	require.NotContains(t, out, "SECRET")
	printed := filepath.Join(dir, "printed.yaml")
	require.NoError(t, os.WriteFile(printed, []byte(out), 0o600))
	code, _, out, errOut = run("check", "--config", printed)
	require.Zero(t, code, errOut)
	require.Contains(t, out, "queue emails: 4 shards, batch_size 1, handler http https://u:REDACTED@hooks.example/p, signed")

	code, _, _, errOut = run("check", "--config", bad, "--json")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `"exit_code":1`)
	code, _, _, errOut = run("check", "--concurency", "3")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "did you mean --concurrency?")
}
