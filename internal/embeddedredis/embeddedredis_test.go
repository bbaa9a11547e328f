package embeddedredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestKeysExpireWithTheWallClock: a key with a TTL disappears after it, as
// on a real Redis (leases depend on it).
func TestKeysExpireWithTheWallClock(t *testing.T) {
	s, err := Start()
	require.NoError(t, err)
	defer s.Close()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "lease", "x", 300*time.Millisecond).Err())
	require.Equal(t, int64(1), c.Exists(ctx, "lease").Val())
	require.Eventually(t, func() bool { return c.Exists(ctx, "lease").Val() == 0 }, 3*time.Second, 20*time.Millisecond)
	s.Close()
	s.Close()
}
