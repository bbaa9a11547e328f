package redistest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestCluster checks the shared cluster: three masters that share the slots,
// so that keys of different hash tags land on different masters.
func TestCluster(t *testing.T) {
	db := redistest.NewCluster(t)
	ctx := context.Background()
	for i := range 30 {
		require.NoError(t, db.Client.Set(ctx, fmt.Sprintf("%s:{tag-%d}:k", db.Prefix, i), "v", 0).Err())
	}
	var mu sync.Mutex
	counts := map[string]int64{}
	require.NoError(t, db.Client.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, db.Prefix+":*").Result()
		mu.Lock()
		defer mu.Unlock()
		counts[c.Options().Addr] = int64(len(keys))
		return err
	}))
	require.Len(t, counts, 3)
	for addr, n := range counts {
		require.Positive(t, n, "master %s holds some of the keys", addr)
	}
}
