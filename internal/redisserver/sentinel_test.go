package redisserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

// TestSentinelFailover starts a Sentinel set, writes through its URL, kills
// the master and checks that the same client reaches the promoted replica,
// which holds the write.
func TestSentinelFailover(t *testing.T) {
	if redisserver.Binary() == "" {
		t.Skip("redis-server not installed")
	}
	set, err := redisserver.StartSentinel(redisserver.SentinelOptions{})
	require.NoError(t, err)
	defer set.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	rdb, err := redisurl.Open(set.URL())
	require.NoError(t, err)
	defer rdb.Close()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	require.NoError(t, rdb.Do(ctx, "WAIT", 1, 5000).Err())

	old, err := set.Master(ctx)
	require.NoError(t, err)
	require.Equal(t, set.Servers()[0], old)
	old.Kill()
	promoted, err := set.WaitFailover(ctx, old)
	require.NoError(t, err)
	require.NotEqual(t, old, promoted)
	for {
		v, err := rdb.Get(ctx, "k").Result()
		if err == nil {
			require.Equal(t, "v", v)
			break
		}
		require.NoError(t, ctx.Err(), "the client never reached the promoted master: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, rdb.Set(ctx, "k2", "v", 0).Err())
}
