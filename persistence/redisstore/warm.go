package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// warmPipelines is the most pipeline connections Warm opens: a node runs
// few pipelines at once (its lease renewals, the queue controls, enqueues).
const warmPipelines = 4

// Warm opens up to conns connections to the server (to every master of a
// Cluster) and leaves them in the client's pool, ready: a connection costs
// one or two round trips before its first command (HELLO, and CLIENT
// SETINFO unless the client disables it), and a lease call that has to
// open one takes that much longer, which on a slow link is longer than the
// lease allows (docs/contract.md §2.1). With the pool warm, an
// acquisition or a renewal is one round trip (a batched renewal too: up to
// warmPipelines connections of go-redis's pipeline pool are opened as
// well). The node calls it once before it serves shards; conns is capped by
// the pool's size. Warm cannot change how later connections open: see New
// on DisableIdentity for a client built by hand.
func (s *Store) Warm(ctx context.Context, conns int) error {
	if conns <= 0 {
		return nil
	}
	ctx = context.WithValue(ctx, uncounted{}, true)
	ping := func(ctx context.Context, c *redis.Client) error {
		n := min(conns, c.Options().PoolSize)
		// go-redis sends pipelines (a node's batched lease renewals among
		// them) on connections of a pool of their own.
		np := min(conns, warmPipelines, cmp.Or(c.Options().PipelinePoolSize, redis.DefaultPipelinePoolSize))
		// Each ping of the pool runs on a connection of its own, held
		// (redis.Conn) until every one has answered, so that the pool opens
		// and initializes n of them even when a ping ends before the next
		// starts. Pipelined pings warm the pipeline pool as well as
		// concurrency lets them (at most np connections).
		//
		// One ping goes first, alone: a redis.Conn initializes its
		// connection with a copy of the client's state, and the first
		// connection's handshake may settle the client's options (go-redis
		// turns off maintenance notifications a server does not support);
		// done concurrently, that races with the held connections'.
		if err := c.Ping(ctx).Err(); err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, n+np)
		held := make([]*redis.Conn, n)
		defer func() {
			for _, cn := range held {
				if cn != nil {
					_ = cn.Close() // back to the pool
				}
			}
		}()
		for i := range n + np {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i < n {
					held[i] = c.Conn()
					errs[i] = held[i].Ping(ctx).Err()
					return
				}
				_, errs[i] = c.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
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
