package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
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

// The HTTP API shows each queue's max_concurrency and rate_limit as the
// workers get them: a rate_limit without a burst has the burst the worker
// uses.
func TestQueueLimits(t *testing.T) {
	t.Parallel()
	got := queueLimits([]config.QueueConfig{
		{Name: "free"},
		{Name: "capped", MaxConcurrency: 4},
		{Name: "rated", RateLimit: &config.RateLimitConfig{PerSecond: 2.5}},
		{Name: "both", MaxConcurrency: 1, RateLimit: &config.RateLimitConfig{PerSecond: 10, Burst: 20}},
	})
	require.Equal(t, map[string]apiv1.QueueLimits{
		"capped": {MaxConcurrency: 4},
		"rated":  {RateLimit: &apiv1.RateLimit{PerSecond: 2.5, Burst: 3}},
		"both":   {MaxConcurrency: 1, RateLimit: &apiv1.RateLimit{PerSecond: 10, Burst: 20}},
	}, got)
}
