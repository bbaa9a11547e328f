package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Entity state of stateful queues (docs/contract.md §11, docs/storage.md
// section 10): the shard's state hash holds id -> fld(version) bytes, or a
// deleted state's tombstone "\x00" fld(version).

// GetState implements persistence.StateStore.
// While a reshard moves the id, its old shard, its way and its new shard
// are read (stateMoving). An id without a state makes the lookup read the
// queue's shape again and, if a reshard began or ended meanwhile, look
// again.
func (s *Store) GetState(ctx context.Context, queue, id string) (persistence.State, error) {
	v, found, err := s.getState(ctx, queue, id)
	if err == nil && !found && s.shapeChanged(ctx, queue) {
		v, found, err = s.getState(ctx, queue, id)
	}
	if err != nil {
		return persistence.State{}, fmt.Errorf("redisstore: get state %s/%s: %w", queue, id, err)
	}
	if !found {
		return persistence.State{}, nil
	}
	st, err := decodeState(v)
	if err != nil {
		return persistence.State{}, fmt.Errorf("redisstore: get state %s/%s: %w", queue, id, err)
	}
	return st, nil
}

// SetState implements persistence.StateStore.
func (s *Store) SetState(ctx context.Context, queue, id string, data []byte, expected int64, maxBytes int) (int64, error) {
	if err := persistence.CheckStateSize(data, maxBytes); err != nil {
		return 0, err
	}
	v, err := s.casState(ctx, queue, id, "set", expected, data)
	if err != nil {
		return 0, fmt.Errorf("redisstore: set state %s/%s: %w", queue, id, err)
	}
	return v, nil
}

// DeleteState implements persistence.StateStore.
func (s *Store) DeleteState(ctx context.Context, queue, id string, expected int64) (bool, error) {
	v, err := s.casState(ctx, queue, id, "del", expected, nil)
	if err != nil {
		return false, fmt.Errorf("redisstore: delete state %s/%s: %w", queue, id, err)
	}
	return v > 0, nil
}

// getState reads id's entry of the state hash: found false when it has
// none.
func (s *Store) getState(ctx context.Context, queue, id string) (string, bool, error) {
	old, sh, err := s.lookupShards(ctx, queue, id)
	if err != nil {
		return "", false, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return "", false, err
	}
	hget := func(sh int) (string, bool, error) {
		v, err := s.rdb.HGet(ctx, s.keys.shard(queue, sh).keys[kState], id).Result()
		if errors.Is(err, redis.Nil) {
			return "", false, nil
		}
		return v, err == nil, err
	}
	if old < 0 {
		return hget(sh)
	}
	v, found, err := hget(old)
	if err != nil {
		return "", false, err
	}
	items, err := s.entryOf(ctx, queue, old, id)
	if err != nil {
		return "", false, err
	}
	if e, ok := items["s"]; ok {
		v, found = e, true
	}
	nv, nfound, err := hget(sh)
	if err != nil || nfound {
		return nv, nfound, err
	}
	return v, found, nil
}

func (s *Store) stateKeys(ctx context.Context, queue, id string) (shardKeys, error) {
	sh, err := s.homeOf(ctx, queue, id)
	if err != nil {
		return shardKeys{}, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return shardKeys{}, err
	}
	return s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh}), nil
}

// feedBound returns the change feed bound the queue's registration
// recorded (keyspace.feeds), or "" when none did (a queue registered by a
// release before the registry had it): state.lua then falls back to the
// bound its shard's owner recorded in the shard meta.
func (s *Store) feedBound(ctx context.Context, queue string) (string, error) {
	v, err := s.rdb.HGet(ctx, s.keys.feeds(), queue).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the change feed bound of %s: %w", queue, err)
	}
	return v, nil
}

func (s *Store) casState(ctx context.Context, queue, id, op string, expected int64, data []byte) (int64, error) {
	if expected < 0 {
		return 0, &persistence.FieldError{Field: "version", Index: -1, Reason: "must not be negative"}
	}
	sk, err := s.stateKeys(ctx, queue, id)
	if err != nil {
		return 0, err
	}
	if data == nil {
		data = []byte{}
	}
	bound, err := s.feedBound(ctx, queue)
	if err != nil {
		return 0, err
	}
	cmds, werr := s.runWrite(ctx, []call{{s: scriptState, keys: sk.keys, args: []any{op, id, strconv.FormatInt(expected, 10), data, s.now(), bound}}})
	if cmds == nil {
		return 0, werr
	}
	res, err := cmds[0].Slice()
	if err != nil {
		return 0, s.reshardErr(queue, err)
	}
	if werr != nil {
		return 0, werr
	}
	if len(res) < 2 {
		return 0, fmt.Errorf("unexpected reply of %d values", len(res))
	}
	status, _ := res[0].(string)
	var n int64
	switch x := res[1].(type) {
	case int64:
		n = x
	case string:
		n, _ = strconv.ParseInt(x, 10, 64)
	}
	if status == "CONFLICT" {
		return 0, fmt.Errorf("%w: expected version %d, current %d", persistence.ErrVersionConflict, expected, n)
	}
	if len(res) > 2 {
		if fed, _ := res[2].(int64); fed == 1 {
			// The change went to the outbox for the change feed: relay it
			// now. On failure the shard's owner relays it with its next
			// call (a stateful queue's Advance reports the outbox).
			sh, _ := s.homeOf(ctx, queue, id) // cached by stateKeys
			ref := persistence.ShardRef{Queue: queue, Shard: sh}
			if _, _, _, err := s.RelayOutbox(ctx, ref, 0); err != nil {
				s.cfg.Logger.Warn("could not relay a state change to the change feed; the shard's owner will", "queue", queue, "shard", ref.Shard, "err", err)
			}
		}
	}
	return n, nil
}
