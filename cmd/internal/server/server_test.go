package server

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A Redis that may evict keys is refused with the flag that accepts it.
func TestOpenStoreRefusesEviction(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := &config.Config{Node: config.NodeConfig{Redis: srv.URL()}}
	_, _, err := openStore(context.Background(), cfg, log)
	require.ErrorContains(t, err, `maxmemory-policy must be noeviction (server has "allkeys-lru")`)
	require.ErrorContains(t, err, "set --allow-eviction (ORDERLY_ALLOW_EVICTION=true, or allow_eviction: true under node in the config file) to run on it anyway")

	cfg.Node.AllowEviction = true
	rdb, closeStore, err := openStore(context.Background(), cfg, log)
	require.NoError(t, err)
	require.NoError(t, rdb.Ping(context.Background()).Err())
	closeStore()
}
