package shard

import (
	"context"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
)

// takeToken takes one token of the queue's rate_limit bucket in the store
// (Config.RateLimit, docs/contract.md §9) for the next handler call,
// waiting for the next token when there is none. A store error is retried
// with backoff: the call does not start without a token. It returns ctx's
// error when the run is cancelled meanwhile. The handler task calls it
// immediately before each call.
func takeToken(ctx context.Context, cfg Config) error {
	r := cfg.RateLimit
	backoff := 50 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, max(cfg.LeaseTTL, 5*time.Second))
		got, wait, err := cfg.Store.TakeTokens(tctx, cfg.Ref.Queue, 1, r.PerSecond, r.Burst)
		cancel()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			cfg.Logger.Warn("cannot take a rate_limit token; retrying", "queue", cfg.Ref.Queue, "err", err)
			wait, backoff = backoff, min(backoff*2, time.Second)
		case got > 0:
			return nil
		}
		if err := clock.Sleep(ctx, cfg.Clock, max(wait, time.Millisecond)); err != nil {
			return err
		}
	}
}
