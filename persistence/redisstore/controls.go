package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Queue controls (docs/contract.md §9, docs/storage.md §9): queue-wide
// state in P:{q}:2:ctl, each queue its own slot, read by every node beside
// its shard calls and never by a shard script.

// ctlPaused is the field of P:{q}:2:ctl set to "1" while the queue is
// paused; absent otherwise.
const ctlPaused = "paused"

// SetPaused implements persistence.ControlStore.
func (s *Store) SetPaused(ctx context.Context, queue string, paused bool) error {
	if _, err := s.shapeOf(ctx, queue); err != nil {
		return err
	}
	var err error
	if paused {
		err = s.rdb.HSet(ctx, s.keys.ctl(queue), ctlPaused, "1").Err()
	} else {
		err = s.rdb.HDel(ctx, s.keys.ctl(queue), ctlPaused).Err()
	}
	if err != nil {
		return fmt.Errorf("redisstore: set paused of %s: %w", queue, err)
	}
	// Tell every node at once (docs/storage.md §9). The notice is a hint:
	// the change is stored, and a node that misses the notice reads it at
	// its next poll, so a failed publish is not the caller's error.
	_ = s.publishControls(ctx, queue)
	return nil
}

// Controls implements persistence.ControlStore: one HGET per queue, in one
// pipeline (go-redis splits it per master on a Cluster).
func (s *Store) Controls(ctx context.Context, queues ...string) ([]persistence.QueueControl, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	for _, q := range queues {
		if err := persistence.ValidateQueueName(q); err != nil {
			return nil, err
		}
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.HGet(ctx, s.keys.ctl(q), ctlPaused)
	}
	_, _ = pipe.Exec(ctx)
	out := make([]persistence.QueueControl, len(queues))
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redisstore: read the controls of %s: %w", queues[i], err)
		}
		out[i].Paused = v == "1"
	}
	return out, nil
}

// SetPermits implements persistence.ControlStore with permits.lua on the queue's
// slot.
func (s *Store) SetPermits(ctx context.Context, queue, holder string, want, limit int, ttl time.Duration) (int, error) {
	if err := persistence.ValidateQueueName(queue); err != nil {
		return 0, err
	}
	if holder == "" || strings.Contains(holder, "#") || want < 0 || limit < 1 || ttl < time.Millisecond {
		return 0, fmt.Errorf("%w: permits of %s: holder %q, want %d, limit %d, ttl %s", persistence.ErrInvalid, queue, holder, want, limit, ttl)
	}
	cmds := runAll(ctx, s.rdb, []call{{s: scriptPermits, keys: []string{s.keys.permits(queue)},
		args: []any{holder, want, limit, ttl.Milliseconds()}}})
	n, err := cmds[0].Int()
	if err != nil {
		return 0, fmt.Errorf("redisstore: permits of %s: %w", queue, err)
	}
	return n, nil
}

// TakeTokens implements persistence.ControlStore with rate.lua on the queue's
// slot.
func (s *Store) TakeTokens(ctx context.Context, queue string, want int, perSecond float64, burst int) (int, time.Duration, error) {
	if err := persistence.ValidateQueueName(queue); err != nil {
		return 0, 0, err
	}
	if want < 1 || !(perSecond > 0) || math.IsInf(perSecond, 1) || burst < 1 {
		return 0, 0, fmt.Errorf("%w: tokens of %s: want %d, per second %v, burst %d", persistence.ErrInvalid, queue, want, perSecond, burst)
	}
	cmds := runAll(ctx, s.rdb, []call{{s: scriptRate, keys: []string{s.keys.rate(queue)},
		args: []any{strconv.FormatFloat(perSecond, 'g', -1, 64), burst, want}}})
	v, err := cmds[0].Int64Slice()
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("unexpected reply %v", v)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("redisstore: tokens of %s: %w", queue, err)
	}
	return int(v[0]), time.Duration(v[1]) * time.Millisecond, nil
}

// AdvanceTick implements persistence.ControlStore with tick.lua.
func (s *Store) AdvanceTick(ctx context.Context, name string, tick time.Time) (bool, error) {
	if name == "" {
		return false, fmt.Errorf("%w: a periodic job needs a name", persistence.ErrInvalid)
	}
	cmds := runAll(ctx, s.rdb, []call{{s: scriptTick, keys: []string{s.keys.ticks()}, args: []any{name, tick.UnixMilli()}}})
	n, err := cmds[0].Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: advance the tick of %s: %w", name, err)
	}
	return n == 1, nil
}

// LastTicks implements persistence.ControlStore: one HMGET.
func (s *Store) LastTicks(ctx context.Context, names ...string) ([]time.Time, error) {
	if len(names) == 0 {
		return nil, nil
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.ticks(), names...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: read the periodic ticks: %w", err)
	}
	out := make([]time.Time, len(names))
	for i, v := range vals {
		str, _ := v.(string)
		if ms, err := strconv.ParseInt(str, 10, 64); err == nil {
			out[i] = time.UnixMilli(ms)
		}
	}
	return out, nil
}
