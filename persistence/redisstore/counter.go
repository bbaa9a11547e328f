package redisstore

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counters are cumulative counts of what the store's client sent, but for
// the pings of Warm.
type Counters struct {
	// RoundTrips counts network round trips: one per command sent alone,
	// one per pipeline or transaction.
	RoundTrips int64
	// Commands counts commands sent by the client; a script call is one
	// command, whatever it runs inside Redis.
	Commands int64
}

// Sub returns c - o, the counts between two snapshots.
func (c Counters) Sub(o Counters) Counters {
	return Counters{RoundTrips: c.RoundTrips - o.RoundTrips, Commands: c.Commands - o.Commands}
}

// counter is a go-redis hook that counts round trips and commands.
type counter struct {
	roundTrips atomic.Int64
	commands   atomic.Int64
}

var _ redis.Hook = (*counter)(nil)

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// uncounted marks a context whose commands the counter skips (Warm's).
type uncounted struct{}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(uncounted{}) != nil {
			return next(ctx, cmd)
		}
		c.roundTrips.Add(1)
		c.commands.Add(1)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(uncounted{}) != nil {
			return next(ctx, cmds)
		}
		c.roundTrips.Add(1)
		c.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func (c *counter) snapshot() Counters {
	return Counters{RoundTrips: c.roundTrips.Load(), Commands: c.commands.Load()}
}
