package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/web"
)

func TestDefaultsMatchWeb(t *testing.T) {
	t.Parallel()
	require.Equal(t, web.DefaultMaxConnections, config.DefaultHTTPMaxConnections)
}

// The connection limit leaves half the open files to everything else: a
// flood of HTTP connections took all 1,024 descriptors of a node and its
// API stopped answering.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configured int
		files      uint64
		want       int
	}{
		{1024, 20000, 1024},
		{1024, 1024, 512},
		{1024, 0, 1024}, // unknown limit
		{5000, 8192, 4096},
		{10, 1, 1},
		{1024, ^uint64(0), 1024}, // unlimited
	} {
		got, _ := connectionLimit(tc.configured, tc.files)
		require.Equal(t, tc.want, got, "%d connections, %d files", tc.configured, tc.files)
	}
	require.NotZero(t, openFileLimit())
}

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	for http, want := range map[string][]string{
		"127.0.0.1:8080":        {"a.example"},
		":8080":                 {"a.example"},
		"[::]:8080":             {"a.example"},
		"orderly.internal:8080": {"a.example", "orderly.internal"},
		"localhost:8080":        {"a.example", "localhost"},
	} {
		require.Equal(t, want, allowedHosts(config.NodeConfig{HTTP: http, HTTPAllowedHosts: []string{"a.example"}}), http)
	}
}
