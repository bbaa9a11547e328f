package redisstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Warm opens up to conns connections to the server (to every master of a
// Cluster) and leaves them in the client's pool, ready: a connection costs
// one or two round trips before its first command (HELLO, and CLIENT
// SETINFO unless the client disables it), and a lease call that has to
// open one takes that much longer, which on a slow link is longer than the
// lease allows (docs/contract.md §2.1). With the pool warm, an
// acquisition or a renewal is one round trip. The node calls it once
// before it serves shards; conns is capped by the pool's size.
func (s *Store) Warm(ctx context.Context, conns int) error {
	if conns <= 0 {
		return nil
	}
	ctx = context.WithValue(ctx, uncounted{}, true)
	ping := func(ctx context.Context, c *redis.Client) error {
		n := min(conns, c.Options().PoolSize)
		// Concurrent pings hold n connections at once, so that the pool
		// opens and initializes that many.
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.Ping(ctx).Err()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch c := s.rdb.(type) {
	case *redis.Client:
		err = ping(ctx, c)
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, ping)
	default:
		err = s.rdb.Ping(ctx).Err()
	}
	if err != nil {
		return fmt.Errorf("redisstore: open connections: %w", err)
	}
	return nil
}
