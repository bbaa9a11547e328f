package app

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/orderlyhq/orderly"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func run(args ...string) (code int, done bool, stdout, stderr string) {
	var out, errOut bytes.Buffer
	_, code, done = parse(args, nil, func(string) string { return "" }, &out, &errOut)
	return code, done, out.String(), errOut.String()
}

// orderly --help lists every subcommand with a summary, then the node's
// flags, in one style.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"--name", "n1", "--help"}} {
		code, done, out, errOut := run(args...)
		require.True(t, done, args)
		require.Zero(t, code, args)
		require.Empty(t, errOut, args)
		require.True(t, strings.HasPrefix(out, "Usage: orderly [flags]               run a node (flags below)\n       orderly <command> [flags]     talk to a running node, or measure\n"), out)
		for _, cmd := range []string{"enqueue", "stats", "members", "morgue", "bench", "version", "help"} {
			require.Regexp(t, `(?m)^  `+cmd+` +[a-z]`, out, "command %s with its summary", cmd)
		}
		require.Contains(t, out, "  --concurrency int\n        batches handled at once by the node, 1..10000\n        (default 5; env ORDERLY_CONCURRENCY)\n")
		require.Contains(t, out, "  --version\n        print the version and exit\n")
		require.Contains(t, out, "max_retry_count (default 25; -1 or none: no\nretries")
		require.NotRegexp(t, `(?m)^  -[a-z]`, out, "no single-dash flags")
	}
	code, done, out, _ := run("help", "stats")
	require.True(t, done)
	require.Zero(t, code)
	require.True(t, strings.HasPrefix(out, "Usage: orderly stats"), out)
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}, {"-v"}} {
		code, done, out, errOut := run(args...)
		require.True(t, done, args)
		require.Zero(t, code, "%v: %s", args, errOut)
		require.Regexp(t, `^orderly `+regexp.QuoteMeta(orderly.Version)+` \((commit \S+, )?go1\.\d+.*, \w+/\w+\)\n$`, out, args)
	}
	code, _, out, _ := run("--version", "--json")
	require.Zero(t, code)
	var v struct{ Version, Go string }
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.Equal(t, orderly.Version, v.Version)
	require.Equal(t, runtime.Version(), v.Go)
}

// A mistyped command or flag is answered with the nearest, exit 2.
func TestMistyped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stast"}, "orderly: unknown command \"stast\"; did you mean stats? (see orderly --help)\n"},
		{[]string{"versoin"}, "orderly: unknown command \"versoin\"; did you mean version? (see orderly --help)\n"},
		{[]string{"--concurency", "5"}, "orderly: config: invalid configuration: unknown flag --concurency; did you mean --concurrency? (see --help)\n"},
		{[]string{"--verison"}, "orderly: config: invalid configuration: unknown flag --verison (see --help)\n"},
	} {
		code, done, out, errOut := run(tc.args...)
		require.True(t, done, tc.args)
		require.Equal(t, 2, code, tc.args)
		require.Empty(t, out)
		require.Equal(t, tc.want, errOut)
	}
	// Flags alone are a node's configuration.
	cfg, code, done := parse([]string{"--name", "n1"}, nil, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
	require.False(t, done)
	require.Zero(t, code)
	require.Equal(t, "n1", cfg.Node.Name)
}
