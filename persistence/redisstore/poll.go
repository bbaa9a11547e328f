package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// pollChunk is the most shards one poll call reads (one EXISTS each for an
// empty shard, seven reads at most), so that one call keeps Redis busy for
// a millisecond or so at most.
const pollChunk = 200

// pollKeys are the keys poll.lua reads of one shard, in its order.
var pollKeys = [...]int{kFifo, kJobs, kLater, kTimers, kOutbox, kInflight, kOutcome, kV1Due, kV1Morgue, kV1Stats, kV1Inflight, kP2, kP3, kP4}

// PollShards implements persistence.ShardStore: one round trip. On standalone
// Redis and Sentinel, one poll call per pollChunk shards (in one pipeline);
// on a Cluster, where the shards' keys lie in different slots, one poll
// call per shard, in one pipeline per master.
//
// A script rather than a pipeline of plain reads: the checks need Redis's
// clock (the one Advance decides what is due by), a shard that holds none
// of the keys that matter (most idle shards) costs one EXISTS and the
// others' keys are read only then, reads inside a script cost Redis less
// than the same commands parsed and answered one by one, and its reply
// lists only the shards with work.
//
// While the store is being upgraded from layout 1, a poll also checks now
// and then (every upgradeRecheck) whether the upgrade is done, and records
// the layout version when it is, as an Advance does: an idle node makes no
// Advance, and the version must not wait for the next job to be recorded.
func (s *Store) PollShards(ctx context.Context, refs []persistence.ShardRef) ([]bool, error) {
	if _, err := s.mode(ctx); err != nil {
		return nil, err
	}
	out := make([]bool, len(refs))
	per := pollChunk
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		per = 1
	}
	var calls []call
	var groups [][]int // refs' indexes, per call
	now := s.now()
	for i, ref := range refs {
		sk, err := s.leasedKeys(ctx, ref)
		if err != nil {
			out[i] = true // its owner's Advance meets the error
			continue
		}
		if len(calls) == 0 || len(groups[len(groups)-1]) == per {
			n := min(per, len(refs)-i)
			calls = append(calls, call{s: scriptPoll, keys: make([]string, 0, n*len(pollKeys)), args: []any{now}})
			groups = append(groups, make([]int, 0, n))
		}
		c := &calls[len(calls)-1]
		for _, k := range pollKeys {
			c.keys = append(c.keys, sk.keys[k])
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
	}
	if len(calls) == 0 {
		return out, nil
	}
	for j, cmd := range runAll(ctx, s.rdb, calls) {
		res, err := cmd.Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("redisstore: poll %d shards: %w", len(refs), err)
		}
		for _, k := range res {
			if k < 1 || int(k) > len(groups[j]) {
				return nil, fmt.Errorf("redisstore: poll %d shards: shard %d in a reply for %d", len(refs), k, len(groups[j]))
			}
			out[groups[j][k-1]] = true
		}
	}
	s.lookAgain(refs, out)
	return out, nil
}
