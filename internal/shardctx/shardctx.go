// Package shardctx carries in a context the shard a shard actor's hook
// runs for: the actor puts its shard into the context of its
// retries-exhausted hook (actors/shard Config.OnDead), and this module's
// own hooks read it (the binary's retries_exhausted_url report names that
// shard), without making it orderly's API. The shard is the one that ran
// the jobs, the number of its generation on a resharded queue
// (docs/contract.md §3.17), which the configured shard count cannot give.
package shardctx

import (
	"context"

	"github.com/orderlyhq/orderly/persistence"
)

type key struct{}

// With returns a copy of ctx that carries ref.
func With(ctx context.Context, ref persistence.ShardRef) context.Context {
	return context.WithValue(ctx, key{}, ref)
}

// Of returns the shard ctx carries, and whether it carries one.
func Of(ctx context.Context) (persistence.ShardRef, bool) {
	ref, ok := ctx.Value(key{}).(persistence.ShardRef)
	return ref, ok
}
