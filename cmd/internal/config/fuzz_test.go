package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzLoadFile feeds arbitrary bytes as the config file: Load never panics,
// and either fails with ErrInvalid or returns a Config that validates.
func FuzzLoadFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"---\n",
		exampleFile,
		"node: {name: n1, join: [a:1, 'b:2'], lease_ttl: 3}\n",
		"queues:\n- name: a\n  retry: {policy: exponential, base: 1s, max: 1m}\n- {name: b, handler: {type: http, url: 'http://h/p'}}\n",
		"queues: [&q {name: a}, *q]\n",
		"a: &x [*x]\nnode: *x\n",
		"<<: {node: {}}\n? [k]\n: v\n",
		"node:\n  bind: a:1\n  bind: b:2\n",
		"node: [\n",
		"node:\n\tname: x\n",
		"a: 1\n---\nb: 2\n",
		"node: {concurrency: !!int x, name: !!binary aGVsbG8=, redis: !!str 5}\n",
		"queues: [{name: a, shards: 1e3, batch_size: 0x10, max_retry_count: 0o7, timeout: .inf}]\n",
		"node: {http_allowed_hosts: ['*', a.example, '[::1]', 'b:1'], http_max_connections: 0, http_tls_cert: /c}\n",
		"queues: [{name: a, handler: {type: log, payloads: no}}, {name: b, handler: {type: noop, payloads: false}}]\n",
		"queues: [{name: a, shards: 4096}, {name: b, shards: 4096}, {name: c, shards: 1}]\n",
		"\xef\xbb\xbfnode: {}\n",
		"\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := loader{
			readFile: func(string) ([]byte, error) { return data, nil },
			hostname: func() (string, error) { return "fuzz", nil },
		}
		cfg, err := l.load([]string{"--config", "fuzz.yaml"}, nil, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			require.Nil(t, cfg)
			return
		}
		require.NoError(t, cfg.Validate())
		require.NotEmpty(t, cfg.Queues)
		require.NotNil(t, cfg.Redacted())
	})
}
