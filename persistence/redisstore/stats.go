package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Stats implements persistence.QueueStore: one stats.lua call per shard, all in
// one pipeline.
func (s *Store) Stats(ctx context.Context, queues ...string) ([]persistence.QueueStats, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	nums := make([][]int, len(queues))
	counts := make([]int, len(queues))
	var calls []call
	for qi, q := range queues {
		shape, err := s.shapeOf(ctx, q)
		if err != nil {
			return nil, err
		}
		counts[qi] = shape.Current.Count
		if nums[qi], err = s.shardNums(ctx, q); err != nil {
			return nil, err
		}
		for _, sh := range nums[qi] {
			calls = append(calls, call{s: scriptStats, keys: s.keysOf(persistence.ShardRef{Queue: q, Shard: sh}).keys, args: []any{now, mode}})
		}
	}
	cmds := runAll(ctx, s.rdb, calls)
	if err := firstErr(cmds); err != nil {
		return nil, fmt.Errorf("redisstore: stats: %w", err)
	}
	ctl, err := s.Controls(ctx, queues...)
	if err != nil {
		return nil, fmt.Errorf("redisstore: stats: %w", err)
	}
	out := make([]persistence.QueueStats, len(queues))
	i := 0
	for qi, q := range queues {
		first, end := slices.Min(nums[qi]), slices.Max(nums[qi])+1
		st := persistence.QueueStats{Name: q, Shards: counts[qi], FirstShard: first, ShardLag: make([]float64, end-first), Paused: ctl[qi].Paused}
		oldest, latest := math.Inf(1), math.Inf(-1)
		for _, sh := range nums[qi] {
			v, _ := cmds[i].Slice()
			i++
			if len(v) != 12 {
				return nil, fmt.Errorf("redisstore: stats of %s: unexpected reply", q)
			}
			length, _ := v[0].(int64)
			retries, _ := v[1].(int64)
			morgue, _ := v[2].(int64)
			busy, _ := v[4].(int64)
			processed, _ := v[5].(int64)
			failed, _ := v[6].(int64)
			snoozed, _ := v[8].(int64)
			discarded, _ := v[9].(int64)
			st.Length += length
			st.Retries += retries
			st.MorgueLength += morgue
			st.Busy += busy
			st.Processed += processed
			st.Failed += failed
			st.Snoozed += snoozed
			st.Discarded += discarded
			cancelled, _ := v[10].(int64)
			st.Cancelled += cancelled
			expired, _ := v[11].(int64)
			st.Expired += expired
			shardOldest, shardNow := math.Inf(1), math.Inf(-1)
			if o, _ := v[3].(string); o != "" {
				if f, err := parseScore(o); err == nil {
					shardOldest = f
					oldest = min(oldest, f)
				}
			}
			if n, _ := v[7].(string); n != "" {
				if f, err := parseScore(n); err == nil {
					shardNow = f
					latest = max(latest, f)
				}
			}
			if !math.IsInf(shardOldest, 1) && !math.IsInf(shardNow, -1) {
				st.ShardLag[sh-first] = max(0, shardNow-shardOldest)
			}
		}
		st.Fresh = st.Length - st.Retries
		if !math.IsInf(oldest, 1) {
			st.OldestDue = persistence.FromUnixSeconds(oldest)
			st.Lag = max(0, latest-oldest)
		}
		out[qi] = st
	}
	return out, nil
}

// ShardOwners implements persistence.QueueStore: the holder of each shard's
// lease, a node of the previous release (layout 1) included.
func (s *Store) ShardOwners(ctx context.Context, queue string) ([]persistence.ShardOwner, error) {
	nums, err := s.shardNums(ctx, queue)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	leases := make([]*redis.StringCmd, len(nums))
	v1leases := make([]*redis.StringCmd, len(nums))
	epochs := make([]*redis.StringCmd, len(nums))
	for sh, num := range nums {
		k := s.keysOf(persistence.ShardRef{Queue: queue, Shard: num}).keys
		leases[sh] = pipe.Get(ctx, k[kLease])
		v1leases[sh] = pipe.Get(ctx, k[kV1Lease])
		epochs[sh] = pipe.Get(ctx, k[kEpoch])
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: shard owners of %s: %w", queue, err)
	}
	out := make([]persistence.ShardOwner, len(nums))
	for sh := range nums {
		out[sh].Shard = nums[sh]
		if epoch, owner, ok := splitToken(leases[sh].Val()); ok {
			out[sh].Owner, out[sh].Epoch = owner, epoch
		} else if v1 := v1leases[sh].Val(); !isFence(v1) {
			// During a rolling upgrade a node of the previous release
			// (layout 1) may hold the shard: its lease is the owner.
			if epoch, owner, ok := splitToken(v1); ok {
				out[sh].Owner, out[sh].Epoch = owner, epoch
			} else {
				out[sh].Epoch, _ = strconv.ParseInt(epochs[sh].Val(), 10, 64)
			}
		} else {
			out[sh].Epoch, _ = strconv.ParseInt(epochs[sh].Val(), 10, 64)
		}
		e, _ := strconv.ParseInt(epochs[sh].Val(), 10, 64)
		s.seeEpoch(max(e, out[sh].Epoch))
	}
	return out, nil
}

// Processing implements persistence.Inspector.
func (s *Store) Processing(ctx context.Context, queue string) ([]persistence.InFlightBatch, error) {
	nums, err := s.shardNums(ctx, queue)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(nums))
	for i, sh := range nums {
		cmds[i] = pipe.Get(ctx, s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh}).keys[kInflight])
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: processing of %s: %w", queue, err)
	}
	var out []persistence.InFlightBatch
	for i, c := range cmds {
		sh := nums[i]
		enc := c.Val()
		if enc == "" {
			continue
		}
		h, jobs, err := decodeBatch(enc)
		if err != nil {
			return nil, fmt.Errorf("redisstore: processing of %s/%d: %w", queue, sh, err)
		}
		out = append(out, persistence.InFlightBatch{
			Shard: sh, Owner: h.owner, Epoch: h.epoch, Seq: h.seq,
			FetchedAt: persistence.FromUnixSeconds(h.fetchedAt), Deadline: h.bound, Jobs: jobs,
		})
	}
	return out, nil
}
