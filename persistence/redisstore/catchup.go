package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Actions, lookups and listings while a store written by layout 1 is
// upgraded (docs/storage.md section 8, "Actions during the upgrade"). The
// views (stats.lua) count layout 1's data with layout 2's; the actions and
// listings read and write layout 2's keys. So before one acts on a shard,
// the store moves the shard's layout 1 data of the kind it touches (queued
// jobs, morgue entries) into layout 2 (migrate.lua with no lease, the move
// the owner's drain makes), and refuses with
// persistence.ErrUpgradeInProgress when a shard holding such data is not
// fenced yet: a node of the previous release may serve it, and nothing may
// be written into layout 2 behind its back. Once the store records layout
// 2 (Store.Layout), none of this runs.

// v1Kind names the layout 1 data an action acts on.
type v1Kind int

const (
	v1Queued v1Kind = 1 << iota // queued jobs ("due", "p:<id>")
	v1Dead                      // morgue entries ("morgue", "m:<id>")
)

// errNotFenced is the error reply of migrate.lua to a caller with no lease
// on a shard a node of the previous release may still serve.
const errNotFenced = "NOT_FENCED"

// upgradeError is the error of an action refused on shards of queue that
// hold layout 1 data and are not fenced yet.
func upgradeError(queue string, shards []int) error {
	names := make([]string, len(shards))
	for i, sh := range shards {
		names[i] = strconv.Itoa(sh)
	}
	return fmt.Errorf("%w: shard %s of queue %s still holds data of the previous release (storage layout 1) "+
		"and no node of this release has served it yet; retry once a node of this release serves it "+
		"(GET /api/v1/cluster names each shard's owner)",
		persistence.ErrUpgradeInProgress, strings.Join(names, ", "), queue)
}

// catchUp moves the layout 1 data of the given kinds of every shard of
// queue into layout 2, before an action or a listing of the whole queue.
// It costs nothing once the store is upgraded, and one pipelined read while
// it is upgrading and no shard holds such data.
func (s *Store) catchUp(ctx context.Context, queue string, kinds v1Kind) error {
	mode, err := s.mode(ctx)
	if err != nil || mode != modeUpgrading {
		return err
	}
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	leases := make([]*redis.StringCmd, shards)
	counts := make([]*redis.IntCmd, shards)
	for sh := range shards {
		k := s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh}).keys
		leases[sh] = pipe.Get(ctx, k[kV1Lease])
		var srcs []string
		if kinds&v1Queued != 0 {
			srcs = append(srcs, k[kV1Due])
		}
		if kinds&v1Dead != 0 {
			srcs = append(srcs, k[kV1Morgue])
		}
		counts[sh] = pipe.Exists(ctx, srcs...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstore: look for layout 1 data in %s: %w", queue, err)
	}
	var held, todo []int
	for sh := range shards {
		switch {
		case counts[sh].Val() == 0:
		case !isFence(leases[sh].Val()):
			held = append(held, sh)
		default:
			todo = append(todo, sh)
		}
	}
	if len(held) > 0 {
		return upgradeError(queue, held)
	}
	for _, sh := range todo {
		ref := persistence.ShardRef{Queue: queue, Shard: sh}
		sk := s.keysOf(ref)
		for {
			moved, err := s.moveV1Chunk(ctx, ref, "", sk, kinds)
			if err != nil {
				return err
			}
			if !moved {
				break
			}
		}
	}
	return nil
}

// catchUpIDs moves the layout 1 entries of the named ids of one shard
// (queued jobs or morgue entries, as kind says) into layout 2, before an
// action or a lookup of those ids. On a shard that is not fenced yet it
// answers persistence.ErrUpgradeInProgress when one of the ids has such an
// entry, and nil when none has.
func (s *Store) catchUpIDs(ctx context.Context, ref persistence.ShardRef, kind v1Kind, ids []string) error {
	mode, err := s.mode(ctx)
	if err != nil || mode != modeUpgrading || len(ids) == 0 {
		return err
	}
	sk := s.keysOf(ref)
	for start := 0; start < len(ids); start += drainChunk {
		chunk := ids[start:min(start+drainChunk, len(ids))]
		for {
			partial, err := s.moveV1IDs(ctx, ref, "", sk, kind, chunk)
			if isNotFenced(err) {
				return s.heldIDs(ctx, ref, sk, kind, chunk)
			}
			if err != nil {
				return err
			}
			if partial == 0 {
				break
			}
		}
	}
	return nil
}

// heldIDs answers whether a shard that is not fenced holds a layout 1
// entry of one of the ids: persistence.ErrUpgradeInProgress if so.
func (s *Store) heldIDs(ctx context.Context, ref persistence.ShardRef, sk shardKeys, kind v1Kind, ids []string) error {
	key := sk.keys[kV1Due]
	if kind == v1Dead {
		key = sk.keys[kV1Morgue]
	}
	scores, err := s.rdb.ZMScore(ctx, key, ids...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstore: look for layout 1 entries in %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	// ZMSCORE answers 0 for a missing member; layout 1's scores are times.
	for _, v := range scores {
		if v != 0 {
			return upgradeError(ref.Queue, []int{ref.Shard})
		}
	}
	return nil
}

// moveV1Chunk moves the next chunk of the shard's layout 1 data of the
// given kinds (queued jobs first, then morgue entries) into layout 2, and
// reports whether there was any. token is the owner's lease, or "" for a
// caller with no lease (the shard must be fenced).
func (s *Store) moveV1Chunk(ctx context.Context, ref persistence.ShardRef, token string, sk shardKeys, kinds v1Kind) (bool, error) {
	for _, src := range []struct {
		kind v1Kind
		key  string
	}{{v1Queued, sk.keys[kV1Due]}, {v1Dead, sk.keys[kV1Morgue]}} {
		if kinds&src.kind == 0 {
			continue
		}
		ids, err := s.rdb.ZRange(ctx, src.key, 0, drainChunk-1).Result()
		if err != nil {
			return false, fmt.Errorf("redisstore: read layout 1 ids of %s/%d: %w", ref.Queue, ref.Shard, err)
		}
		if len(ids) > 0 {
			_, err := s.moveV1IDs(ctx, ref, token, sk, src.kind, ids)
			return true, err
		}
	}
	return false, nil
}

// moveV1IDs runs migrate.lua on the named ids (at most drainChunk) and
// returns how many have payloads left to move.
func (s *Store) moveV1IDs(ctx context.Context, ref persistence.ShardRef, token string, sk shardKeys, kind v1Kind, ids []string) (int64, error) {
	op := "queue"
	if kind == v1Dead {
		op = "morgue"
	}
	args := []any{s.now(), token, op, strconv.Itoa(movePayloads)}
	keys := sk.with()
	for _, id := range ids {
		args = append(args, id)
		if kind == v1Dead {
			keys = append(keys, sk.v1Morgue(id))
		} else {
			keys = append(keys, sk.v1Payloads(id))
		}
	}
	res, err := run(ctx, s.rdb, scriptMigrate, keys, args...).Int64Slice()
	switch {
	case err == nil:
		return res[1], nil
	case isLeaseLost(err):
		return 0, fmt.Errorf("%w: %s/%d", persistence.ErrLeaseLost, ref.Queue, ref.Shard)
	default:
		return 0, fmt.Errorf("redisstore: move layout 1 data of %s/%d: %w", ref.Queue, ref.Shard, err)
	}
}

func isNotFenced(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, errNotFenced)
}
