package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// TrimMorgue implements persistence.ShardStore.
func (s *Store) TrimMorgue(ctx context.Context, ref persistence.ShardRef, before time.Time, limit int) (int, error) {
	sk, err := s.leasedKeys(ctx, ref)
	if err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = actionChunk
	}
	res, err := run(ctx, s.rdb, scriptMorgue, sk.keys, s.now(), "delete", s.noticeChannel(ctx, ref.Queue, ref.Shard), strconv.Itoa(ref.Shard),
		"before", strconv.Itoa(limit), strconv.Itoa(movePayloads), formatFloat(persistence.UnixSeconds(before))).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("redisstore: trim morgue of %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	return int(res[0]), nil
}

// RequeueMorgue implements persistence.Admin.
func (s *Store) RequeueMorgue(ctx context.Context, queue string, ids []string) (int, error) {
	return s.morgueIDs(ctx, queue, "requeue", ids)
}

// RequeueMorgueAll implements persistence.Admin.
func (s *Store) RequeueMorgueAll(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "requeue morgue", scriptMorgue, func(sh int, now string, _ int64) []any {
		return []any{now, "requeue", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), "first", strconv.Itoa(actionChunk),
			strconv.Itoa(movePayloads), "0"}
	})
}

// DeleteMorgue implements persistence.Admin.
func (s *Store) DeleteMorgue(ctx context.Context, queue string, ids []string) (int, error) {
	return s.morgueIDs(ctx, queue, "delete", ids)
}

// DeleteMorgueAll implements persistence.Admin.
func (s *Store) DeleteMorgueAll(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "delete morgue", scriptMorgue, func(sh int, now string, _ int64) []any {
		return []any{now, "delete", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), "first", strconv.Itoa(actionChunk),
			strconv.Itoa(movePayloads), "0"}
	})
}

func (s *Store) morgueIDs(ctx context.Context, queue, op string, ids []string) (int, error) {
	if _, err := s.shapeOf(ctx, queue); err != nil {
		return 0, err
	}
	byShard := map[int][]string{}
	for i, id := range ids {
		if err := persistence.ValidateID(id, i); err != nil {
			err.(*persistence.FieldError).Field = "ids"
			return 0, err
		}
		sh, err := s.homeOf(ctx, queue, id)
		if err != nil {
			return 0, err
		}
		byShard[sh] = append(byShard[sh], id)
	}
	for sh, list := range byShard {
		if err := s.catchUpIDs(ctx, persistence.ShardRef{Queue: queue, Shard: sh}, v1Dead, list); err != nil {
			return 0, fmt.Errorf("redisstore: %s morgue entries of %s: %w", op, queue, err)
		}
	}
	total := 0
	for sh, list := range byShard {
		sk := s.keys.shard(queue, sh)
		for start := 0; start < len(list); start += idChunk {
			chunk := list[start:min(start+idChunk, len(list))]
			now := s.now()
			for {
				args := []any{now, op, s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), "ids", "0", strconv.Itoa(movePayloads), "0"}
				for _, id := range chunk {
					args = append(args, id)
				}
				res, err := run(ctx, s.rdb, scriptMorgue, sk.keys, args...).Int64Slice()
				if err != nil {
					return total, fmt.Errorf("redisstore: %s morgue entries of %s: %w", op, queue, s.reshardErr(queue, err))
				}
				total += int(res[0])
				if res[1] == 0 {
					break
				}
				if err := ctx.Err(); err != nil {
					return total, fmt.Errorf("redisstore: %s morgue entries of %s: %w", op, queue, s.reshardErr(queue, err))
				}
			}
		}
	}
	return total, nil
}
