package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// reload writes the configuration file b and loads it with env.
func reload(t *testing.T, b []byte, env []string) *Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "printed.yaml")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	l := loader{readFile: readFile, hostname: func() (string, error) { return "another-host", nil }}
	cfg, err := l.load([]string{"--config", path}, env, nil)
	require.NoError(t, err, "the printed configuration:\n%s", b)
	cfg.File = ""
	return cfg
}

// FileYAML prints a configuration file that loads back into the same
// configuration, defaults, durations and periodic payloads included; the
// node's secrets are left out (named in a comment), so the file takes
// them from the environment.
func TestFileYAMLLoadsBack(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{
		"example":  exampleFile,
		"defaults": "",
		"odd values": `node: {name: "n:1", join: ["[::1]:7000"], http_allowed_hosts: ["*"], lease_ttl: 1500ms, morgue_ttl: 36h30m}
queues:
  - {name: "no", shards: 1, max_retry_count: 1, rate_limit: {per_second: 0.5}, retry: {policy: linear, base: 250ms, max: 1m}, feed_max_len: 0, state: true}
  - {name: "true", prefetch: 20, max_prefetch: 40, concurrent_calls: 4, handler: {type: http, url: "http://h:9/p?a=1#x", client: direct}}
periodic:
  - {name: p, queue: "no", schedule: "CRON_TZ=UTC 0 3 * * *", id: "#1", payload: {"s": "a\"b\n<é>", "n": [1, 2.5, -3e+30, null, true], "o": {}}}
  - {name: q, queue: "true", schedule: "@every 1m", id: "yes", payload: "null"}
  - {name: r, queue: "true", schedule: "@every 2s", id: "~", payload: 12345678901234567}
`,
	} {
		t.Run(name, func(t *testing.T) {
			want, _, err := loadFile(t, file, nil)
			require.NoError(t, err)
			want.File = ""
			b, err := want.FileYAML()
			require.NoError(t, err)
			require.NotContains(t, string(b), "s3cret-token")
			require.NotContains(t, string(b), "MDEyMzQ1Njc4OWFiY2RlZg==")
			var env []string
			if want.Node.HTTPToken != "" {
				require.Contains(t, string(b), "http_token (ORDERLY_HTTP_TOKEN)")
				env = append(env, "ORDERLY_HTTP_TOKEN="+want.Node.HTTPToken, "ORDERLY_GOSSIP_KEY="+want.Node.GossipKey)
			}
			require.NotContains(t, string(b), "000000", "durations as the file writes them: %s", b)
			require.Equal(t, want, reload(t, b, env))
		})
	}
}

// The passwords of URLs, handler secrets and header values are replaced by
// REDACTED, each with a comment; nothing of them is printed.
func TestFileYAMLRedacts(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, `node: {redis: "redis://u:pw-SECRET1@127.0.0.1:6379/0", actor_addr: 127.0.0.1:8090, actor_token: SECRET2, http_read_token: SECRET3, http_token: SECRET4}
queues:
  - {name: a, handler: {type: http, url: "https://u:SECRET5@h/p", secret: SECRET6, headers: {Authorization: "Bearer SECRET7"}}}
`, nil)
	require.NoError(t, err)
	b, err := cfg.FileYAML()
	require.NoError(t, err)
	out := string(b)
	require.NotContains(t, out, "SECRET", out)
	for _, line := range []string{
		"  # http_token (ORDERLY_HTTP_TOKEN), http_read_token (ORDERLY_HTTP_READ_TOKEN), actor_token (ORDERLY_ACTOR_TOKEN)\n",
		"  redis: redis://u:REDACTED@127.0.0.1:6379/0 # the password is a secret, not shown: set it again\n",
		"      url: https://u:REDACTED@h/p # the password is a secret, not shown: set it again\n",
		"      secret: REDACTED # secret, not shown: set it again\n",
		"        Authorization: REDACTED # secret, not shown: set it again\n",
	} {
		require.Contains(t, out, line)
	}
	require.Equal(t, 4, strings.Count(out, "REDACTED"))
}

// handler.signature: standard loads with a whsec_ secret and is printed
// back; the secret is not.
func TestHandlerSignatureStandard(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, `queues:
  - {name: a, handler: {type: http, url: "http://h/p", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, signature: standard}}
  - {name: b, handler: {type: http, url: "http://h/p", secret: s3cr3t}}
`, nil)
	require.NoError(t, err)
	require.Equal(t, SignatureStandard, cfg.Queues[0].Handler.Signature)
	require.Empty(t, cfg.Queues[1].Handler.Signature, "the default: Orderly-Signature")
	b, err := cfg.FileYAML()
	require.NoError(t, err)
	require.Contains(t, string(b), "signature: standard")
	require.NotContains(t, string(b), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
}
