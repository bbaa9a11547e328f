package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

// queuesFile is a config file of n queues of shards shards each.
func queuesFile(n, shards int) string {
	var b strings.Builder
	b.WriteString("queues:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: q%d, shards: %d, handler: {type: noop}}\n", i, shards)
	}
	return b.String()
}

// The shards of all queues are capped per node: 245 queues of 4,096 shards
// passed validation and made a node grow to 3.7 GB, never ready.
func TestShardTotalIsCapped(t *testing.T) {
	t.Parallel()
	_, _, err := loadFile(t, queuesFile(245, 4096), nil)
	requireProblems(t, err, "", "queues: the 245 queues have 1003520 shards in total, more than one node can serve (at most 8192): use fewer shards per queue, or fewer queues")

	_, _, err = loadFile(t, queuesFile(3, 4096), nil)
	require.ErrorContains(t, err, "the 3 queues have 12288 shards in total")

	cfg, _, err := loadFile(t, queuesFile(2, orderly.MaxNodeShards/2), nil)
	require.NoError(t, err, "exactly the cap")
	require.Len(t, cfg.Queues, 2)
}

func TestHTTPSecuritySettings(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "node: {http_allowed_hosts: [orderly.internal, 10.0.0.7, '[::1]', '*']}", nil,
		"--http-tls-cert", "/c.pem", "--http-tls-key", "/k.pem", "--http-max-connections", "64")
	require.NoError(t, err)
	require.Equal(t, []string{"orderly.internal", "10.0.0.7", "[::1]", "*"}, cfg.Node.HTTPAllowedHosts)
	require.Equal(t, 64, cfg.Node.HTTPMaxConnections)
	require.Equal(t, "/c.pem", cfg.Node.HTTPTLSCert)

	for _, tc := range []struct {
		name, file string
		env        []string
		args       []string
		want       string
	}{
		{"cert without key", "", nil, []string{"--http-tls-cert", "/c.pem"},
			"node.http_tls_cert, node.http_tls_key: give both (the certificate and its key) or neither"},
		{"key without cert", "", []string{"ORDERLY_HTTP_TLS_KEY=/k.pem"}, nil,
			"node.http_tls_cert, node.http_tls_key: give both (the certificate and its key) or neither"},
		{"actor TLS cert alone", "", nil, []string{"--actor-addr", "127.0.0.1:8090", "--actor-tls-cert", "/c.pem"},
			"node.actor_tls_cert, node.actor_tls_key, node.actor_tls_ca: give all three"},
		{"actor TLS without a CA", "", []string{"ORDERLY_ACTOR_TLS_CERT=/c.pem", "ORDERLY_ACTOR_TLS_KEY=/k.pem"}, []string{"--actor-addr", "127.0.0.1:8090"},
			"node.actor_tls_cert, node.actor_tls_key, node.actor_tls_ca: give all three"},
		{"actor TLS without the remote", "node: {actor_tls_cert: /c.pem, actor_tls_key: /k.pem, actor_tls_ca: /ca.pem}", nil, nil,
			"node.actor_tls_cert: needs node.actor_addr"},
		{"allowed host with a scheme", "node: {http_allowed_hosts: ['http://a.example']}", nil, nil,
			`node.http_allowed_hosts: "http://a.example" is not a host name or address (give names without port or scheme)`},
		{"allowed host with a port", "", []string{"ORDERLY_HTTP_ALLOWED_HOSTS=a.example:8080"}, nil,
			`ORDERLY_HTTP_ALLOWED_HOSTS: "a.example:8080" is not a host name or address`},
		{"no connections", "", nil, []string{"--http-max-connections", "0"},
			"flag --http-max-connections: must be between 1 and 1048576, got 0"},
		{"payloads on an http handler", "queues: [{name: a, handler: {type: http, url: 'http://h/p', payloads: true}}]", nil, nil,
			"queues[0].handler.payloads: only allowed for handler type log, not http (line 1)"},
		{"payloads not a boolean", "queues: [{name: a, handler: {type: log, payloads: 100}}]", nil, nil,
			`queues[0].handler.payloads: "100" is not a boolean (true or false) (line 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadFile(t, tc.file, tc.env, tc.args...)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}

	cfg, _, err = loadFile(t, "queues: [{name: a, handler: {type: log, payloads: false}}, {name: b, handler: {type: log, payloads: true}}, {name: c}]", nil)
	require.NoError(t, err)
	require.True(t, cfg.Queues[0].Handler.HidePayloads)
	require.False(t, cfg.Queues[1].Handler.HidePayloads)
	require.False(t, cfg.Queues[2].Handler.HidePayloads, "payloads are shown by default")
}

func TestNodeTextNamesTheShardCap(t *testing.T) {
	t.Parallel()
	require.Contains(t, NodeText, fmt.Sprintf("at most %d shards", orderly.MaxNodeShards))
}
