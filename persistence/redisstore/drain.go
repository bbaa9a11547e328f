package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// DrainShard implements persistence.Resharder: one export of drain.lua on
// the drained shard, the entry's items imported into their shards of the
// new generation (import.lua, one call per shard, in one pipeline), then
// the entry confirmed. An entry that fails on its way stays in the drained
// shard and is imported again by the next step, whoever owns the shard
// then: each new shard keeps the last entry it took from each source
// (docs/storage.md section 11).
func (s *Store) DrainShard(ctx context.Context, lease persistence.Lease, limit int) (persistence.DrainResult, error) {
	if limit < 1 {
		return persistence.DrainResult{}, &persistence.FieldError{Field: "limit", Index: -1, Reason: "must be at least 1"}
	}
	sk, err := s.leasedKeys(ctx, lease.ShardRef)
	if err != nil {
		return persistence.DrainResult{}, err
	}
	res, err := run(ctx, s.rdb, scriptDrain, sk.keys, s.now(), lease.Token, "export", strconv.Itoa(limit)).Slice()
	if err != nil {
		return persistence.DrainResult{}, s.drainErr(lease, err)
	}
	kind, _ := res[0].(string)
	switch {
	case kind == "done":
		return persistence.DrainResult{Done: true}, nil
	case kind == "outbox" && len(res) == 2:
		n, _ := res[1].(int64)
		return persistence.DrainResult{Outbox: int(n)}, nil
	case kind != "entry" || len(res) != 5:
		return persistence.DrainResult{}, fmt.Errorf("redisstore: drain %s: unexpected reply %v", lease.ShardRef, res)
	}
	seq, _ := res[1].(string)
	entry, _ := res[2].(string)
	final, _ := res[3].(string)
	jobs, _ := res[4].(int64)
	if entry == "" {
		return persistence.DrainResult{}, nil
	}
	if s.drainStage != nil {
		s.drainStage("exported")
	}
	if err := s.importEntry(ctx, lease.ShardRef, seq, entry); err != nil {
		return persistence.DrainResult{}, err
	}
	if s.drainStage != nil {
		s.drainStage("imported")
	}
	if err := run(ctx, s.rdb, scriptDrain, sk.keys, s.now(), lease.Token, "ack", seq).Err(); err != nil {
		return persistence.DrainResult{}, s.drainErr(lease, err)
	}
	return persistence.DrainResult{Moved: int(jobs), Done: final == "1"}, nil
}

func (s *Store) drainErr(lease persistence.Lease, err error) error {
	if isLeaseLost(err) {
		return fmt.Errorf("%w: %s (token %s)", persistence.ErrLeaseLost, lease.ShardRef, lease.Token)
	}
	return fmt.Errorf("redisstore: drain %s: %w", lease.ShardRef, err)
}

// importEntry sends each item of a drained shard's entry to its shard of
// the new generation: an id's items to the id's shard, the counters to one
// shard, the marks to every shard.
func (s *Store) importEntry(ctx context.Context, from persistence.ShardRef, seq, entry string) error {
	shape, err := s.shapeOf(ctx, from.Queue)
	if err == nil && !shape.From.Contains(from.Shard) {
		shape, err = s.refreshShape(ctx, from.Queue)
	}
	if err != nil {
		return err
	}
	if !shape.From.Contains(from.Shard) {
		return fmt.Errorf("redisstore: drain %s: the shard is not in the generation the queue drains (%s)", from, shape)
	}
	cur := shape.Current
	items := map[int][]any{}
	r := fieldReader{s: entry}
	for !r.done() {
		var it [3]string
		for i := range it {
			if it[i], err = r.next(); err != nil {
				return fmt.Errorf("redisstore: drain %s: corrupt entry %s: %w", from, seq, err)
			}
		}
		switch it[0] {
		case "k":
			for sh := cur.Base; sh < cur.Base+cur.Count; sh++ {
				items[sh] = append(items[sh], it[0], it[1], it[2])
			}
		case "c":
			sh := cur.Base + (from.Shard-shape.From.Base)%cur.Count
			items[sh] = append(items[sh], it[0], it[1], it[2])
		default:
			sh := cur.Shard(it[1])
			items[sh] = append(items[sh], it[0], it[1], it[2])
		}
	}
	src := strconv.Itoa(shape.From.Gen) + "/" + strconv.Itoa(from.Shard)
	calls := make([]call, 0, len(items))
	for sh, its := range items {
		args := append([]any{s.now(), src, seq, s.noticeChannel(ctx, from.Queue, sh), strconv.Itoa(sh)}, its...)
		calls = append(calls, call{s: scriptImport, keys: s.keysOf(persistence.ShardRef{Queue: from.Queue, Shard: sh}).keys, args: args})
	}
	cmds, werr := s.runWrite(ctx, calls)
	if err := errors.Join(firstErr(cmds), werr); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstore: drain %s: import entry %s: %w", from, seq, err)
	}
	return nil
}
