package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// shapeOf returns the queue's shape (docs/storage.md section 11), cached
// once read: a producer whose cached shape is stale meets RESHARDED on the
// shard it routed to and reads it again (refreshShape).
func (s *Store) shapeOf(ctx context.Context, queue string) (persistence.QueueShape, error) {
	s.mu.RLock()
	sh, ok := s.shapes[queue]
	s.mu.RUnlock()
	if ok {
		return sh, nil
	}
	return s.refreshShape(ctx, queue)
}

// refreshShape reads the queue's shape from the registry and caches it.
func (s *Store) refreshShape(ctx context.Context, queue string) (persistence.QueueShape, error) {
	sh, _, err := s.readShape(ctx, queue)
	return sh, err
}

// readShape is refreshShape; it also returns the registry's spelling of the
// shape (what a compare-and-set of it compares).
func (s *Store) readShape(ctx context.Context, queue string) (persistence.QueueShape, string, error) {
	if err := persistence.ValidateQueueName(queue); err != nil {
		return persistence.QueueShape{}, "", err
	}
	v, err := s.rdb.HGet(ctx, s.keys.queues(), queue).Result()
	if errors.Is(err, redis.Nil) {
		return persistence.QueueShape{}, "", fmt.Errorf("%w: %s", persistence.ErrUnknownQueue, queue)
	}
	if err != nil {
		return persistence.QueueShape{}, "", fmt.Errorf("redisstore: look up queue %s: %w", queue, err)
	}
	sh, err := s.cacheShape(queue, v)
	if err != nil {
		return persistence.QueueShape{}, "", fmt.Errorf("redisstore: queue %s: %w", queue, err)
	}
	return sh, v, nil
}

// cacheShape parses a shape read from the registry (v) and caches it; the
// drained shards learned of go with a shape that changed.
func (s *Store) cacheShape(queue, v string) (persistence.QueueShape, error) {
	sh, ret, err := parseShapeRetired(v)
	if err != nil {
		return sh, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.shapes[queue]; !ok || old != sh {
		for ref := range s.moved {
			if ref.Queue == queue {
				delete(s.moved, ref)
			}
		}
	}
	s.shapes[queue] = sh
	if ret.gen.Count > 0 {
		s.retired[queue] = ret
	} else {
		delete(s.retired, queue)
	}
	return sh, nil
}

// relayShape is the shape a relay's jobs are routed by: while a reshard
// runs, or after one ended if some job's outbox entry is older than its end
// (it may have been written into the drained generation then), the drained
// generation's shards come first, so that their relay marks say which
// entries they took (docs/storage.md section 11).
func (s *Store) relayShape(queue string, sh persistence.QueueShape, from relayFrom) persistence.QueueShape {
	if sh.Resharding() || from.source == "" {
		return sh
	}
	s.mu.RLock()
	ret, ok := s.retired[queue]
	s.mu.RUnlock()
	if !ok || ret.gen.Gen >= sh.Current.Gen {
		return sh
	}
	for _, e := range from.entries {
		if ret.holds(e) {
			return persistence.QueueShape{Current: sh.Current, From: ret.gen}
		}
	}
	return sh
}

// route returns the shard an id's jobs go to, and the generation the
// enqueue names (enqueue.lua checks it): its shard of the drained
// generation until that shard is known drained, else its current one.
func (s *Store) route(sh persistence.QueueShape, queue, id string) (int, int) {
	if sh.Resharding() {
		old := sh.From.Shard(id)
		s.mu.RLock()
		moved := s.moved[persistence.ShardRef{Queue: queue, Shard: old}]
		s.mu.RUnlock()
		if !moved {
			return old, sh.From.Gen
		}
	}
	return sh.Current.Shard(id), sh.Current.Gen
}

// markMoved records that shard of queue is drained: its ids go to their
// current shards.
func (s *Store) markMoved(queue string, shard int) {
	s.mu.Lock()
	s.moved[persistence.ShardRef{Queue: queue, Shard: shard}] = true
	s.mu.Unlock()
}

// Shape implements persistence.Resharder; it reads the registry, not the
// cache.
func (s *Store) Shape(ctx context.Context, queue string) (persistence.QueueShape, error) {
	return s.refreshShape(ctx, queue)
}

// Shapes implements persistence.Resharder: one HMGET of the registry; the
// shapes read replace the cached ones.
func (s *Store) Shapes(ctx context.Context, queues ...string) ([]persistence.QueueShape, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	for _, q := range queues {
		if err := persistence.ValidateQueueName(q); err != nil {
			return nil, err
		}
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.queues(), queues...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: look up queues: %w", err)
	}
	out := make([]persistence.QueueShape, len(queues))
	for i, q := range queues {
		v, ok := vals[i].(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s", persistence.ErrUnknownQueue, q)
		}
		if out[i], err = s.cacheShape(q, v); err != nil {
			return nil, fmt.Errorf("redisstore: queue %s: %w", q, err)
		}
	}
	return out, nil
}

// Reshard implements persistence.Resharder: it prepares the new
// generation's shards, sets the shape (a compare-and-set on the registry),
// then marks the drained generation's shards (FinishReshard marks any a
// failure left, so a start that stops half-way resumes there).
func (s *Store) Reshard(ctx context.Context, queue string, shards int) (persistence.QueueShape, error) {
	if err := persistence.ValidateShards(shards); err != nil {
		return persistence.QueueShape{}, err
	}
	if err := s.requireLayout2(ctx); err != nil {
		return persistence.QueueShape{}, err
	}
	cur, raw, err := s.readShape(ctx, queue)
	if err != nil {
		return persistence.QueueShape{}, err
	}
	if cur.Resharding() {
		if cur.Current.Count == shards {
			return cur, s.markDraining(ctx, queue, cur)
		}
		return cur, fmt.Errorf("%w: %s is moving from %d to %d shards", persistence.ErrReshardRunning,
			queue, cur.From.Count, cur.Current.Count)
	}
	if cur.Current.Count == shards {
		return cur, nil
	}
	next := nextShape(cur, shards)
	dw, err := s.rdb.HGet(ctx, s.keysOf(persistence.ShardRef{Queue: queue, Shard: cur.Current.Base}).keys[kMeta], "dw").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return cur, fmt.Errorf("redisstore: reshard %s: %w", queue, err)
	}
	calls := make([]call, 0, shards)
	for _, ref := range next.Current.Refs(queue) {
		calls = append(calls, call{s: scriptReshard, keys: s.keysOf(ref).keys, args: []any{"init", strconv.Itoa(next.Current.Gen), dw}})
	}
	cmds, werr := s.runWrite(ctx, calls)
	if err := errors.Join(firstErr(cmds), werr); err != nil {
		return cur, fmt.Errorf("redisstore: reshard %s: prepare the new shards: %w", queue, err)
	}
	ok, err := run(ctx, s.rdb, scriptShape, []string{s.keys.queues()}, queue, raw, next.String()).Int()
	if err != nil {
		return cur, fmt.Errorf("redisstore: reshard %s: %w", queue, err)
	}
	if ok == 0 {
		now, err := s.refreshShape(ctx, queue)
		if err != nil {
			return cur, err
		}
		return now, fmt.Errorf("%w: %s changed while the reshard started", persistence.ErrReshardRunning, queue)
	}
	if _, err := s.cacheShape(queue, next.String()); err != nil {
		return next, err
	}
	err = s.markDraining(ctx, queue, next)
	// Nodes read the shape at once (a hint: they poll it too).
	_ = s.publishControls(ctx, queue)
	return next, err
}

// markDraining marks every shard of sh.From draining (reshard.lua "drain";
// a shard marked before is left as it is) and returns the shards' reshard
// states.
func (s *Store) markDraining(ctx context.Context, queue string, sh persistence.QueueShape) error {
	_, err := s.reshardStates(ctx, queue, sh, "drain")
	return err
}

// reshardStates runs reshard.lua's op ("drain" or "state") on every shard
// of sh.From and returns, per shard, its state ("", "d", "s" or "m") and
// the ids moved from it so far.
func (s *Store) reshardStates(ctx context.Context, queue string, sh persistence.QueueShape, op string) ([]shardReshard, error) {
	refs := sh.From.Refs(queue)
	calls := make([]call, len(refs))
	gen := strconv.Itoa(sh.From.Gen)
	for i, ref := range refs {
		calls[i] = call{s: scriptReshard, keys: s.keysOf(ref).keys,
			args: []any{op, gen, s.noticeChannel(ctx, queue, ref.Shard), strconv.Itoa(ref.Shard)}}
	}
	var cmds []*redis.Cmd
	var werr error
	if op == "state" {
		cmds = runAll(ctx, s.rdb, calls)
	} else {
		cmds, werr = s.runWrite(ctx, calls)
	}
	if err := errors.Join(firstErr(cmds), werr); err != nil {
		return nil, fmt.Errorf("redisstore: reshard %s: %w", queue, err)
	}
	out := make([]shardReshard, len(refs))
	for i, c := range cmds {
		v, err := c.StringSlice()
		if err != nil || len(v) != 4 {
			return nil, fmt.Errorf("redisstore: reshard %s: unexpected reply %v: %w", queue, c.Val(), err)
		}
		out[i].state = v[0]
		out[i].moved, _ = strconv.ParseInt(v[1], 10, 64)
		out[i].queued, _ = strconv.ParseInt(v[3], 10, 64)
	}
	return out, nil
}

// shardReshard is one drained shard's progress.
type shardReshard struct {
	state  string // "" none, "d" draining, "s" sealed, "m" drained
	moved  int64  // ids whose jobs left the shard so far
	queued int64  // ids queued in the shard
}

// ReshardStatus implements persistence.Resharder.
func (s *Store) ReshardStatus(ctx context.Context, queue string) (persistence.ReshardStatus, error) {
	sh, err := s.refreshShape(ctx, queue)
	if err != nil || !sh.Resharding() {
		return persistence.ReshardStatus{Shape: sh}, err
	}
	states, err := s.reshardStates(ctx, queue, sh, "state")
	if err != nil {
		return persistence.ReshardStatus{}, err
	}
	out := persistence.ReshardStatus{Shape: sh}
	for _, st := range states {
		out.Moved += st.moved
		out.Left += st.queued
		if st.state == "m" {
			out.Drained++
		}
	}
	return out, nil
}

// FinishReshard implements persistence.Resharder: it marks the drained
// generation's shards that a failed start left unmarked, and when every
// one of them is drained, sets the shape to the current generation alone.
func (s *Store) FinishReshard(ctx context.Context, queue string) (bool, error) {
	sh, err := s.refreshShape(ctx, queue)
	if err != nil {
		return false, err
	}
	if !sh.Resharding() {
		return true, nil
	}
	states, err := s.reshardStates(ctx, queue, sh, "drain")
	if err != nil {
		return false, err
	}
	for _, st := range states {
		if st.state != "m" {
			return false, nil
		}
	}
	// The drained generation stays named, with the end: relays of entries
	// written before it still ask its relay marks (relayShape).
	ok, err := run(ctx, s.rdb, scriptShape, []string{s.keys.queues()}, queue, sh.String(), endedShape(sh, time.Now())).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: finish the reshard of %s: %w", queue, err)
	}
	if ok == 1 {
		_ = s.publishControls(ctx, queue) // nodes read the shape at once
	}
	sh, err = s.refreshShape(ctx, queue)
	return err == nil && !sh.Resharding(), err
}

// requireLayout2 refuses a reshard while the store is still being upgraded
// from layout 1: a node of the previous release may serve a shard.
func (s *Store) requireLayout2(ctx context.Context) error {
	mode, err := s.mode(ctx)
	if err != nil {
		return err
	}
	if mode == modeUpgrading {
		return fmt.Errorf("%w: resharding needs the storage upgrade to be complete", persistence.ErrUpgradeInProgress)
	}
	return nil
}

// shardNums returns the numbers of every shard of the queue that may hold
// its ids, in order: the current generation's and, while a reshard runs,
// the drained one's.
func (s *Store) shardNums(ctx context.Context, queue string) ([]int, error) {
	sh, err := s.shapeOf(ctx, queue)
	if err != nil {
		return nil, err
	}
	refs := sh.Refs(queue)
	out := make([]int, len(refs))
	for i, r := range refs {
		out[i] = r.Shard
	}
	return out, nil
}

// homeOf returns the shard that holds id's data, for an operation on the
// id: its current shard, unless a reshard drains its shard of the drained
// generation and that shard is not drained yet: then ErrResharding (the
// id's data may be on its way, in part). A shard not known drained is
// asked (one read, while a reshard runs).
func (s *Store) homeOf(ctx context.Context, queue, id string) (int, error) {
	sh, err := s.shapeOf(ctx, queue)
	if err != nil {
		return 0, err
	}
	if !sh.Resharding() {
		return sh.Current.Shard(id), nil
	}
	shard, gen := s.route(sh, queue, id)
	if gen != sh.From.Gen {
		return shard, nil
	}
	// Maybe drained since: ask the shard.
	xs, err := s.rdb.HGet(ctx, s.keysOf(persistence.ShardRef{Queue: queue, Shard: shard}).keys[kMeta], "xs").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("redisstore: look up %s/%d: %w", queue, shard, err)
	}
	if xs == "m" {
		s.markMoved(queue, shard)
		return sh.Current.Shard(id), nil
	}
	return 0, fmt.Errorf("%w: %s/%d", persistence.ErrResharding, queue, shard)
}

// reshardErr turns the reshard guard's reply of a script (lua/lib/guard.lua)
// into ErrResharding; the queue's cached shape is read again, so that a
// retry goes where the id is now.
func (s *Store) reshardErr(queue string, err error) error {
	if !redis.HasErrorPrefix(err, "RESHARDING") && !redis.HasErrorPrefix(err, "RESHARDED") {
		return err
	}
	s.mu.Lock()
	delete(s.shapes, queue)
	s.mu.Unlock()
	return fmt.Errorf("%w: %s (%v)", persistence.ErrResharding, queue, err)
}
