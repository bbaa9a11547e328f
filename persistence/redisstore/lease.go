package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// newNonce returns 64 random bits, hex-encoded.
func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// AcquireShard implements persistence.ShardStore.
func (s *Store) AcquireShard(ctx context.Context, ref persistence.ShardRef, owner string, ttl time.Duration) (persistence.Lease, int, error) {
	if err := validOwner(owner); err != nil {
		return persistence.Lease{}, 0, err
	}
	sk, err := s.shardKeys(ctx, ref)
	if err != nil {
		return persistence.Lease{}, 0, err
	}
	floor := ""
	if seen := s.epochSeen.Load(); seen > 0 {
		floor = strconv.FormatInt(seen+1, 10)
	}
	args := []any{s.now(), owner, ttlMillis(ttl), newNonce(), floor, strconv.FormatInt(s.epochOffset, 10)}
	cmds, werr := s.runWrite(ctx, []call{{s: scriptAcquire, keys: sk.keys, args: args}})
	res, err := cmds[0].Slice()
	if err != nil {
		return persistence.Lease{}, 0, fmt.Errorf("redisstore: acquire %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	if werr != nil {
		// The lease may exist on the master only: not acquired. It expires,
		// or the caller acquires it again (the same owner renews it).
		return persistence.Lease{}, 0, fmt.Errorf("redisstore: acquire %s/%d: %w", ref.Queue, ref.Shard, werr)
	}
	status, _ := res[0].(string)
	if status == "HELD" {
		holder, _ := res[1].(string)
		_, who, _ := splitToken(holder)
		var left int64
		if len(res) > 2 {
			left, _ = res[2].(int64)
		}
		return persistence.Lease{}, 0, &persistence.LeaseHeldError{ShardRef: ref, Holder: who, TTL: time.Duration(max(left, 0)) * time.Millisecond}
	}
	if len(res) < 5 {
		return persistence.Lease{}, 0, fmt.Errorf("redisstore: acquire %s/%d: unexpected reply of %d values", ref.Queue, ref.Shard, len(res))
	}
	token, _ := res[1].(string)
	epoch, _ := res[2].(int64)
	restored, _ := res[3].(int64)
	lease := persistence.Lease{ShardRef: ref, Owner: owner, Epoch: epoch, Token: token}
	s.seeEpoch(epoch)
	if v1, _ := res[4].(int64); v1 == 1 {
		n, err := s.restoreV1Inflight(ctx, lease, sk, ttl)
		restored += int64(n)
		if err != nil {
			return lease, int(restored), err
		}
	}
	return lease, int(restored), nil
}

// seeEpoch raises the highest epoch seen to epoch: the store's next
// acquisitions get epochs above it, even from a promoted replica that lost
// the write of epoch and whose clock is behind (docs/contract.md §2.5).
func (s *Store) seeEpoch(epoch int64) {
	for {
		seen := s.epochSeen.Load()
		if epoch <= seen || s.epochSeen.CompareAndSwap(seen, epoch) {
			return
		}
	}
}

// RenewShard implements persistence.ShardStore.
func (s *Store) RenewShard(ctx context.Context, lease persistence.Lease, ttl time.Duration) error {
	return s.RenewShards(ctx, []persistence.Lease{lease}, ttl)[0]
}

// renewChunk is the most leases one renew_many call renews, so that one
// call keeps Redis busy for a millisecond or so at most.
const renewChunk = 500

// RenewShards implements persistence.ShardStore: one round trip. On standalone
// Redis and Sentinel, one renew_many call per renewChunk leases (in one
// pipeline); on a Cluster, where the shards' keys lie in different slots,
// one renew call per lease, in one pipeline per master.
func (s *Store) RenewShards(ctx context.Context, leases []persistence.Lease, ttl time.Duration) []error {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster || len(leases) < 2 {
		return s.renewEach(ctx, leases, ttl)
	}
	errs := make([]error, len(leases))
	var calls []call
	var groups [][]int // leases' indexes, per call
	for i, l := range leases {
		sk, err := s.leasedKeys(ctx, l.ShardRef)
		if err != nil {
			errs[i] = err
			continue
		}
		if len(calls) == 0 || len(groups[len(groups)-1]) == renewChunk {
			n := min(renewChunk, len(leases)-i)
			calls = append(calls, call{s: scriptRenewMany, keys: make([]string, 0, 2*n), args: append(make([]any, 0, 1+n), ttlMillis(ttl))})
			groups = append(groups, make([]int, 0, n))
		}
		c := &calls[len(calls)-1]
		c.keys = append(c.keys, sk.keys[kV1Lease], sk.keys[kLease])
		c.args = append(c.args, l.Token)
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
	}
	if len(calls) == 0 {
		return errs
	}
	cmds, werr := s.runWrite(ctx, calls)
	for j, cmd := range cmds {
		res, err := cmd.Int64Slice()
		for k, i := range groups[j] {
			l := leases[i]
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("redisstore: renew %s/%d: %w", l.Queue, l.Shard, err)
			case k >= len(res):
				errs[i] = fmt.Errorf("redisstore: renew %s/%d: a reply of %d values for %d leases", l.Queue, l.Shard, len(res), len(groups[j]))
			case res[k] != 1:
				errs[i] = fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, l.Queue, l.Shard, l.Token)
			case werr != nil:
				errs[i] = fmt.Errorf("redisstore: renew %s/%d: %w", l.Queue, l.Shard, werr)
			}
		}
	}
	return errs
}

// renewEach renews each lease with its own renew call, all in one pipeline
// (one per master on a Cluster).
func (s *Store) renewEach(ctx context.Context, leases []persistence.Lease, ttl time.Duration) []error {
	errs := make([]error, len(leases))
	calls := make([]call, 0, len(leases))
	idx := make([]int, 0, len(leases))
	for i, l := range leases {
		sk, err := s.leasedKeys(ctx, l.ShardRef)
		if err != nil {
			errs[i] = err
			continue
		}
		calls = append(calls, call{s: scriptRenew, keys: sk.keys, boxed: sk.boxed, args: []any{l.Token, ttlMillis(ttl)}})
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return errs
	}
	cmds, werr := s.runWrite(ctx, calls)
	for j, cmd := range cmds {
		l := leases[idx[j]]
		ok, err := cmd.Int()
		switch {
		case err != nil:
			errs[idx[j]] = fmt.Errorf("redisstore: renew %s/%d: %w", l.Queue, l.Shard, err)
		case ok != 1:
			errs[idx[j]] = fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, l.Queue, l.Shard, l.Token)
		case werr != nil:
			errs[idx[j]] = fmt.Errorf("redisstore: renew %s/%d: %w", l.Queue, l.Shard, werr)
		}
	}
	return errs
}

// ReleaseShard implements persistence.ShardStore.
func (s *Store) ReleaseShard(ctx context.Context, lease persistence.Lease) error {
	sk, err := s.leasedKeys(ctx, lease.ShardRef)
	if err != nil {
		return err
	}
	cmds, werr := s.runWrite(ctx, []call{{s: scriptRelease, keys: sk.keys, args: []any{s.now(), lease.Token,
		s.noticeChannel(ctx, lease.Queue, lease.Shard), strconv.Itoa(lease.Shard)}}})
	n, err := cmds[0].Int()
	if err != nil {
		return fmt.Errorf("redisstore: release %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if werr != nil {
		return fmt.Errorf("redisstore: release %s/%d: %w", lease.Queue, lease.Shard, werr)
	}
	if n < 0 {
		return fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
	}
	return nil
}

func validOwner(owner string) error {
	if owner == "" || len(owner) > 256 {
		return &persistence.FieldError{Field: "owner", Index: -1, Reason: "must be 1 to 256 bytes"}
	}
	return nil
}

func ttlMillis(ttl time.Duration) string {
	return strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
}
