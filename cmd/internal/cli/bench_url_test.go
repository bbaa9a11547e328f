package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchRedisURLErrors checks that orderly bench refuses a Redis URL with
// an unknown parameter, naming it, and never prints the URL's password.
func TestBenchRedisURLErrors(t *testing.T) {
	for _, url := range []string{
		"redis://u:TOPSECRET@127.0.0.1:1/0?bogus=1",
		"redis+cluster://u:TOPSECRET@127.0.0.1:1,127.0.0.1:2?bogus=1",
		"redis+sentinel://u:TOPSECRET@127.0.0.1:1/mymaster?bogus=1",
	} {
		code, out, errOut := runCLI([]string{"bench", "--redis", url, "--scenario", "lowkiq", "--jobs", "10"}, nil)
		require.NotEqual(t, ExitOK, code, url)
		require.Contains(t, errOut, "unknown parameter bogus", url)
		require.NotContains(t, out+errOut, "TOPSECRET", url)
	}
}
