package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// The way back to storage layout 1 (docs/storage.md section 8), for the
// orderly store downgrade command.

// Downgrade rolls the store back to storage layout 1, so that the previous
// release can serve it: every shard's in-flight record is restored, its
// queued jobs (payloads and scores, perform_at, retry count, error), morgue
// entries and counters are written into layout 1's keys, its layout 2 keys
// and the fence are deleted, and so is the layout version. Stop every node
// of this release first: Downgrade refuses (ErrServed) while a shard's
// layout 2 lease is held. It is resumable: run it again after a failure.
// The previous release knows a queue's shards only as 0 to count-1: a
// resharded queue whose shards start elsewhere, or whose reshard still
// runs, is refused before anything changes; one on shards 0 to count-1 gets
// its plain count back in the registry.
func (s *Store) Downgrade(ctx context.Context) error {
	specs, err := s.Queues(ctx)
	if err != nil {
		return err
	}
	plain, err := s.downgradableShapes(ctx)
	if err != nil {
		return err
	}
	for _, q := range specs {
		s.mu.Lock()
		s.shapes[q.Name] = persistence.QueueShape{Current: persistence.ShardRange{Gen: 1, Count: q.Shards}}
		s.mu.Unlock()
		for sh := range q.Shards {
			if err := s.downgradeShard(ctx, q.Name, sh); err != nil {
				return err
			}
		}
	}
	for q, n := range plain {
		if err := s.rdb.HSet(ctx, s.keys.queues(), q, n).Err(); err != nil {
			return fmt.Errorf("redisstore: downgrade %s: %w", q, err)
		}
	}
	if err := s.rdb.Del(ctx, s.keys.layout()).Err(); err != nil {
		return fmt.Errorf("redisstore: downgrade: %w", err)
	}
	s.upgrade.mu.Lock()
	s.upgrade.v2, s.upgrade.checked = false, time.Time{}
	s.upgrade.mu.Unlock()
	return nil
}

// downgradableShapes checks that every queue's shards are 0 to count-1,
// as the previous release numbers them, and returns the resharded ones'
// plain counts (their registry spelling for that release).
func (s *Store) downgradableShapes(ctx context.Context) (map[string]string, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.queues()).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: downgrade: list queues: %w", err)
	}
	out := map[string]string{}
	for q, v := range m {
		if _, err := strconv.Atoi(v); err == nil {
			continue
		}
		sh, err := parseShape(v)
		if err != nil {
			return nil, fmt.Errorf("redisstore: downgrade: queue %s: %w", q, err)
		}
		if sh.Resharding() {
			return nil, fmt.Errorf("redisstore: downgrade: queue %s is being resharded; wait until the reshard ends", q)
		}
		if sh.Current.Base != 0 {
			return nil, fmt.Errorf("redisstore: downgrade: queue %s was resharded onto shards %d to %d, and the previous release reads only shards 0 to %d; reshard it to at most %d shards first (that reshard uses shards from 0)",
				q, sh.Current.Base, sh.Current.Base+sh.Current.Count-1, sh.Current.Count-1, sh.Current.Base)
		}
		out[q] = strconv.Itoa(sh.Current.Count)
	}
	return out, nil
}

func (s *Store) downgradeShard(ctx context.Context, queue string, sh int) error {
	sk := s.keys.shard(queue, sh)
	k := sk.keys
	fail := func(err error) error {
		return fmt.Errorf("redisstore: downgrade %s/%d: %w", queue, sh, err)
	}
	if n, err := s.rdb.Exists(ctx, k[kLease]).Result(); err != nil {
		return fail(err)
	} else if n > 0 {
		return fail(ErrServed)
	}
	step := func(keys []string, args ...any) error {
		return run(ctx, s.rdb, scriptDowngr, keys, append([]any{s.now()}, args...)...).Err()
	}
	if err := step(k, "inflight", "0"); err != nil {
		return fail(err)
	}
	for _, src := range []struct {
		op, key string
		v1Key   func(string) string
	}{{"queue", k[kJobs], sk.v1Payloads}, {"morgue", k[kMorgue], sk.v1Morgue}} {
		for {
			ids, _, err := s.rdb.HScan(ctx, src.key, 0, "", drainChunk).Result()
			if err != nil {
				return fail(err)
			}
			if len(ids) == 0 {
				break
			}
			args := []any{src.op, strconv.Itoa(movePayloads)}
			keys := sk.with()
			for i := 0; i < len(ids); i += 2 { // HSCAN answers field, value
				args = append(args, ids[i])
				keys = append(keys, src.v1Key(ids[i]))
			}
			if err := step(keys, args...); err != nil {
				return fail(err)
			}
		}
	}
	if err := step(k, "finish", "0"); err != nil {
		return fail(err)
	}
	return nil
}
