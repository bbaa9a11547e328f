package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// The upgrade from storage layout 1 (docs/storage.md section 8). The store
// is layout 2; what it keeps of layout 1 is here: the layout version,
// recorded once no shard holds layout 1 data; the look for layout 1 data
// an Advance makes (lookForLayout1, then drainLayout1 when the script found
// some); the in-flight record of a layout 1 owner that AcquireShard
// restores; and the moves of migrate.lua. Layout 1's keys are spelled in
// keys.go with the others. Downgrade (downgrade.go) goes back.

// LayoutVersion is the storage layout this release writes, recorded in
// Redis (the key "<prefix>:layout") so that later releases can gate on it.
const LayoutVersion = "2"

// Script modes (enqueue.lua ARGV[2], the v1 flags of the other scripts).
const (
	// modeLayout2: every shard is in layout 2; layout 1's keys are ignored.
	modeLayout2 = "2"
	// modeUpgrading: a store written by layout 1 is being upgraded; the
	// scripts read and drain layout 1's keys (docs/storage.md section 8).
	modeUpgrading = "1"
)

// upgradeRecheck is how long the store trusts a cached "upgrading" state
// before it reads the layout key again.
const upgradeRecheck = 5 * time.Second

// drainChunk is how many layout 1 ids one migration call moves.
const drainChunk = 200

// v1Recheck is how often an Advance looks for layout 1 data in a shard of
// an upgraded store: a layout 1 node that still runs may enqueue into its
// old keys, and what it writes is drained from there.
const v1Recheck = 10 * time.Second

// upgradeState is what the store knows of the upgrade from layout 1.
type upgradeState struct {
	mu      sync.Mutex // guards the fields
	v2      bool       // the layout key says 2: final, never read again
	checked time.Time  // when "upgrading" was last read
	// looked is when an Advance last looked for layout 1 data in each
	// shard of an upgraded store (v1Recheck).
	looked map[persistence.ShardRef]time.Time
}

// lookForLayout1 is advance.lua's ARGV[10]: "1" to look for layout 1 data
// in the shard, always while the store is being upgraded, every v1Recheck
// once it is.
func (s *Store) lookForLayout1(ctx context.Context, ref persistence.ShardRef) string {
	mode, err := s.mode(ctx)
	if err != nil || mode == modeUpgrading {
		return "1"
	}
	u := &s.upgrade
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.looked == nil {
		u.looked = map[persistence.ShardRef]time.Time{}
	}
	if time.Since(u.looked[ref]) < v1Recheck {
		return "0"
	}
	u.looked[ref] = time.Now()
	return "1"
}

// lookAgain makes the next Advance of each shard of refs that found is
// true look for layout 1 data at once, not only every v1Recheck: the idle
// poll reported work there, maybe layout 1 data a node of the previous
// release enqueued during a roll.
func (s *Store) lookAgain(refs []persistence.ShardRef, found []bool) {
	u := &s.upgrade
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, f := range found {
		if f {
			delete(u.looked, refs[i])
		}
	}
}

// drainLayout1 moves a chunk of the layout 1 data an Advance found in the
// shard into layout 2, and reports whether it did; the next Advance looks
// again, at once. A failure is logged and the next Advance tries again.
func (s *Store) drainLayout1(ctx context.Context, lease persistence.Lease, sk shardKeys) bool {
	u := &s.upgrade
	u.mu.Lock()
	delete(u.looked, lease.ShardRef)
	u.mu.Unlock()
	err := s.drainV1(ctx, lease, sk)
	if err != nil && !errors.Is(err, persistence.ErrLeaseLost) {
		s.cfg.Logger.Warn("could not move layout 1 data of the shard into layout 2; retrying with the next batch",
			"queue", lease.Queue, "shard", lease.Shard, "err", err)
	}
	return err == nil
}

// initLayout records the layout version on a store nothing wrote to yet: no
// layout 1 node ever registered a queue there, so no layout 1 data exists.
func (s *Store) initLayout(ctx context.Context) error {
	s.upgrade.mu.Lock()
	v2 := s.upgrade.v2
	s.upgrade.mu.Unlock()
	if v2 {
		return nil
	}
	n, err := s.rdb.HLen(ctx, s.keys.queues()).Result()
	if err != nil {
		return fmt.Errorf("redisstore: read the layout: %w", err)
	}
	if n == 0 {
		if err := s.rdb.SetNX(ctx, s.keys.layout(), LayoutVersion, 0).Err(); err != nil {
			return fmt.Errorf("redisstore: record the layout: %w", err)
		}
	}
	_, err = s.mode(ctx)
	return err
}

// mode returns modeLayout2 once the store is fully in layout 2, else
// modeUpgrading. While upgrading, it reads the layout key at most every
// upgradeRecheck, and records the layout version once the upgrade is done.
func (s *Store) mode(ctx context.Context) (string, error) {
	s.upgrade.mu.Lock()
	if s.upgrade.v2 {
		s.upgrade.mu.Unlock()
		return modeLayout2, nil
	}
	if !s.upgrade.checked.IsZero() && time.Since(s.upgrade.checked) < upgradeRecheck {
		s.upgrade.mu.Unlock()
		return modeUpgrading, nil
	}
	s.upgrade.checked = time.Now()
	s.upgrade.mu.Unlock()

	v, err := s.rdb.Get(ctx, s.keys.layout()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("redisstore: read the layout: %w", err)
	}
	done := v != "" && v >= LayoutVersion
	if !done {
		if done, err = s.upgradeDone(ctx); err != nil {
			return "", err
		}
		if done {
			if err := s.rdb.Set(ctx, s.keys.layout(), LayoutVersion, 0).Err(); err != nil {
				return "", fmt.Errorf("redisstore: record the layout: %w", err)
			}
			s.cfg.Logger.Info("storage upgraded: every shard is in layout 2", "layout", LayoutVersion)
		}
	}
	if !done {
		return modeUpgrading, nil
	}
	s.upgrade.mu.Lock()
	s.upgrade.v2 = true
	s.upgrade.mu.Unlock()
	return modeLayout2, nil
}

// Layout reports the layout version recorded in the store: LayoutVersion,
// or "" for a store written by layout 1 and not fully upgraded yet (every
// shard of every queue fenced and drained of layout 1 data). It records
// the version when the upgrade just finished.
func (s *Store) Layout(ctx context.Context) (string, error) {
	s.upgrade.mu.Lock()
	s.upgrade.checked = time.Time{}
	s.upgrade.mu.Unlock()
	m, err := s.mode(ctx)
	if err != nil || m != modeLayout2 {
		return "", err
	}
	return LayoutVersion, nil
}

// upgradeDone reports whether no shard of any queue holds layout 1 data or
// may be served by a layout 1 node. (A layout 1 node still running may
// enqueue into layout 1 keys later: owners drain those whatever the
// recorded version.)
func (s *Store) upgradeDone(ctx context.Context) (bool, error) {
	specs, err := s.Queues(ctx)
	if err != nil {
		return false, err
	}
	pipe := s.rdb.Pipeline()
	type probe struct {
		lease *redis.StringCmd
		data  *redis.IntCmd
	}
	var probes []probe
	for _, q := range specs {
		for sh := range q.Shards {
			k := s.keys.shard(q.Name, sh).keys
			probes = append(probes, probe{
				lease: pipe.Get(ctx, k[kV1Lease]),
				data:  pipe.Exists(ctx, k[kV1Due], k[kV1Morgue], k[kV1Inflight], k[kV1Stats]),
			})
		}
	}
	if len(probes) == 0 {
		return false, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("redisstore: check the upgrade: %w", err)
	}
	for _, p := range probes {
		if !isFence(p.lease.Val()) || p.data.Val() > 0 {
			return false, nil
		}
	}
	return true, nil
}

// fence is what layout 2 writes into layout 1's lease key (lua/lib/fence.lua).
const fence = "0/orderly-layout-2"

// A reshard's fences (lua/lib/fence.lua): a shard being drained, and one
// drained (docs/storage.md section 11).
const (
	fenceDrain = "0/orderly-reshard-drain"
	fenceMoved = "0/orderly-reshard-moved"
)

// isFence reports whether v, layout 1's lease key of a shard, fences the
// shard from layout 1 nodes.
func isFence(v string) bool { return v == fence || v == fenceDrain || v == fenceMoved }

// restoreV1Inflight restores, chunk by chunk, the in-flight record a layout
// 1 owner left in the shard, renewing the lease as it goes.
func (s *Store) restoreV1Inflight(ctx context.Context, lease persistence.Lease, sk shardKeys, ttl time.Duration) (int, error) {
	restored := 0
	last := time.Now()
	for {
		res, err := run(ctx, s.rdb, scriptMigrate, sk.keys, s.now(), lease.Token, "inflight", strconv.Itoa(movePayloads)).Int64Slice()
		if err != nil {
			if isLeaseLost(err) {
				return restored, fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
			}
			return restored, fmt.Errorf("redisstore: restore layout 1 in-flight record of %s/%d: %w", lease.Queue, lease.Shard, err)
		}
		restored += int(res[0])
		if res[1] == 0 {
			return restored, nil
		}
		if time.Since(last) > ttl/3 {
			if err := s.RenewShard(ctx, lease, ttl); err != nil {
				return restored, err
			}
			last = time.Now()
		}
	}
}

// drainV1 moves one chunk of the shard's layout 1 data into layout 2: queued
// jobs first (fetches skip an id until its layout 1 entry is gone), then
// the morgue, then the counters. A first round trip reads the ids, a second
// moves them, handed their per-id keys (catchup.go).
func (s *Store) drainV1(ctx context.Context, lease persistence.Lease, sk shardKeys) error {
	moved, err := s.moveV1Chunk(ctx, lease.ShardRef, lease.Token, sk, v1Queued|v1Dead)
	if moved || err != nil {
		return err
	}
	args := []any{s.now(), lease.Token}
	n, err := s.rdb.Exists(ctx, sk.keys[kV1Inflight]).Result()
	if err != nil {
		return fmt.Errorf("redisstore: read layout 1 keys of %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if n > 0 {
		args = append(args, "inflight", strconv.Itoa(movePayloads))
	} else {
		args = append(args, "stats", "0")
	}
	if err := run(ctx, s.rdb, scriptMigrate, sk.keys, args...).Err(); err != nil {
		if isLeaseLost(err) {
			return fmt.Errorf("%w: %s/%d", persistence.ErrLeaseLost, lease.Queue, lease.Shard)
		}
		return fmt.Errorf("redisstore: move layout 1 data of %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	return nil
}
