package redisstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Defaults of Config.
const (
	// DefaultPrefix is the default key prefix.
	DefaultPrefix = "orderly"
	// DefaultEnqueueChunk is how many jobs one enqueue script call carries at
	// most; larger batches are split into several calls sent in one pipeline,
	// so that no single call blocks the server for long (500 payloads of one
	// id with hundreds of thousands queued take a few milliseconds).
	DefaultEnqueueChunk = 500
	// actionChunk is how many ids one call of a bulk action handles.
	actionChunk = 500
	// idChunk is how many named ids one morgue call carries.
	idChunk = 500
	// movePayloads is how many payloads of one id a queue action, a morgue
	// move or a migration call moves or deletes at most.
	movePayloads = persistence.DefaultMaxPayloadsPerCall
	// drainChunk is how many layout 1 ids one migration call moves.
	drainChunk = 200
)

// Config configures a Store. The zero value of each field means its default.
type Config struct {
	// Prefix is put before every key [DefaultPrefix]. It must not contain
	// '{' or '}'.
	Prefix string
	// Now is a test seam. When it is nil (production), the scripts read the
	// time from Redis (TIME) for every due check, default score, default
	// perform_at and morgue time, so that the nodes' clocks do not matter.
	// When it is set, its value is sent to the scripts as "now" instead, so
	// that a test drives the store's time. Lease TTLs and epochs always
	// follow Redis's own clock.
	Now func() time.Time
	// Logger receives the store's logs [slog.Default()].
	Logger *slog.Logger
	// MaxPayloadBytes limits one payload's size
	// [persistence.DefaultMaxPayloadBytes].
	MaxPayloadBytes int
	// EnqueueChunk is the most jobs per enqueue script call
	// [DefaultEnqueueChunk].
	EnqueueChunk int
	// Durability is DurabilityAsync [default] or DurabilityReplicated: an
	// enqueue, a settle (Advance) and a lease write (acquire, renew,
	// release) then also wait for DurabilityReplicas replicas
	// [DefaultDurabilityReplicas] for at most DurabilityTimeout
	// [DefaultDurabilityTimeout], and fail with an error wrapping
	// persistence.ErrNotReplicated when too few acknowledged
	// (docs/contract.md §4). The timeout must stay below the client's read
	// timeout (go-redis: 3s by default).
	Durability         string
	DurabilityReplicas int
	DurabilityTimeout  time.Duration
}

func (c *Config) withDefaults() (Config, error) {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Prefix == "" {
		out.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(out.Prefix, "{}") {
		return out, fmt.Errorf("redisstore: prefix %q must not contain '{' or '}'", out.Prefix)
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.MaxPayloadBytes <= 0 {
		out.MaxPayloadBytes = persistence.DefaultMaxPayloadBytes
	}
	if out.EnqueueChunk <= 0 {
		out.EnqueueChunk = DefaultEnqueueChunk
	}
	switch out.Durability {
	case "", DurabilityAsync:
		out.Durability = DurabilityAsync
	case DurabilityReplicated:
		if out.DurabilityReplicas <= 0 {
			out.DurabilityReplicas = DefaultDurabilityReplicas
		}
		if out.DurabilityTimeout <= 0 {
			out.DurabilityTimeout = DefaultDurabilityTimeout
		}
	default:
		return out, fmt.Errorf("redisstore: durability %q is not one of %s, %s", out.Durability, DurabilityAsync, DurabilityReplicated)
	}
	return out, nil
}

// Store is the Redis implementation of persistence.Store.
type Store struct {
	rdb   redis.UniversalClient
	cfg   Config
	keys  keyspace
	count *counter

	mu     sync.RWMutex   // guards shards and sks
	shards map[string]int // queue name -> shard count, as registered
	// sks caches the keys of the shards served so far, built once: an
	// Advance uses them on every call (one string per key otherwise).
	sks map[persistence.ShardRef]shardKeys

	layout layoutState

	scriptsLoaded atomic.Bool // LoadScripts succeeded once

	notices atomic.Int32 // noticeMode, once known (notice.go)

	wait *waitSpec // the WAIT after writes, in the replicated mode

	// afterOutboxRead, set only by tests (export_test.go) before any call,
	// runs in RelayOutbox between reading the outbox and relaying it.
	afterOutboxRead func()

	v1mu      sync.Mutex                         // guards v1checked
	v1checked map[persistence.ShardRef]time.Time // last look for layout 1 data, once upgraded
}

// v1Recheck is how often an Advance looks for layout 1 data in a shard of
// an upgraded store: a layout 1 node that still runs may enqueue into its
// old keys, and what it writes is drained from there.
const v1Recheck = 10 * time.Second

// checkV1 tells advance.lua whether to look for layout 1 data: always while
// the store is being upgraded, now and then once it is.
func (s *Store) checkV1(ctx context.Context, ref persistence.ShardRef) string {
	mode, err := s.mode(ctx)
	if err != nil || mode == modeUpgrading {
		return "1"
	}
	s.v1mu.Lock()
	defer s.v1mu.Unlock()
	if s.v1checked == nil {
		s.v1checked = map[persistence.ShardRef]time.Time{}
	}
	if time.Since(s.v1checked[ref]) < v1Recheck {
		return "0"
	}
	s.v1checked[ref] = time.Now()
	return "1"
}

var _ persistence.Store = (*Store)(nil)

// New returns a Store on the given client (a plain, Cluster or Sentinel
// client). It adds a hook to the client that counts round trips and
// commands (see Counters); it does no I/O.
//
// The store uses the client as it is built. Clients built from a Redis URL
// (redisurl.URL.NewClient, as the orderly binary does) set DisableIdentity,
// so that a new connection skips CLIENT SETINFO, one round trip before its
// first command; a client built by hand sends it unless its options
// (redis.Options, redis.ClusterOptions, redis.FailoverOptions) set
// DisableIdentity: true. Warm opens the pool's connections ahead of use
// either way, but a connection opened later (the pool grows past what Warm
// opened, or replaces a broken or idle-closed one) pays that round trip on
// the call that needs it, a lease call included: set DisableIdentity on a
// client whose link to Redis is slow (docs/contract.md §2.1).
func New(rdb redis.UniversalClient, cfg *Config) (*Store, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{
		rdb:    rdb,
		cfg:    c,
		keys:   keyspace{prefix: c.Prefix},
		count:  &counter{},
		shards: map[string]int{},
	}
	if c.Durability == DurabilityReplicated {
		s.wait = &waitSpec{replicas: c.DurabilityReplicas, timeout: c.DurabilityTimeout}
	}
	rdb.AddHook(s.count)
	return s, nil
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Counters returns how many round trips and commands went through the store's
// client since it was created.
func (s *Store) Counters() Counters { return s.count.snapshot() }

// LoadScripts loads the store's Lua scripts into the server (every master of
// a Cluster). Calling it at start is optional (a script missing on the
// server is loaded on first use) but surfaces permission problems early.
func (s *Store) LoadScripts(ctx context.Context) error {
	if err := loadScripts(ctx, s.rdb); err != nil {
		return err
	}
	s.scriptsLoaded.Store(true)
	return nil
}

// Ping implements persistence.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstore: ping: %w", err)
	}
	return nil
}

// now returns the "now" argument of the scripts: empty (Redis TIME) unless
// the test seam Config.Now is set.
func (s *Store) now() string {
	if s.cfg.Now == nil {
		return ""
	}
	return formatFloat(persistence.UnixSeconds(s.cfg.Now()))
}

// RegisterQueue implements persistence.Store. On a store no release wrote
// to yet, it also records the layout version. The first registration of a
// Store loads the scripts, so that calls do not meet NOSCRIPT later.
func (s *Store) RegisterQueue(ctx context.Context, spec persistence.QueueSpec) error {
	if err := persistence.ValidateQueueName(spec.Name); err != nil {
		return err
	}
	if err := persistence.ValidateShards(spec.Shards); err != nil {
		return err
	}
	if err := s.initLayout(ctx); err != nil {
		return err
	}
	if !s.scriptsLoaded.Load() {
		if err := s.LoadScripts(ctx); err != nil {
			return err
		}
	}
	want := strconv.Itoa(spec.Shards)
	if _, err := s.rdb.HSetNX(ctx, s.keys.queues(), spec.Name, want).Result(); err != nil {
		return fmt.Errorf("redisstore: register queue %s: %w", spec.Name, err)
	}
	got, err := s.rdb.HGet(ctx, s.keys.queues(), spec.Name).Result()
	if err != nil {
		return fmt.Errorf("redisstore: register queue %s: %w", spec.Name, err)
	}
	if got != want {
		return fmt.Errorf("%w: queue %s has %s shards in the store, the configuration says %d",
			persistence.ErrShardCountMismatch, spec.Name, got, spec.Shards)
	}
	if spec.Stateful {
		if spec.FeedMaxLen < 0 {
			return &persistence.FieldError{Field: "feed_max_len", Index: -1, Reason: "must not be negative"}
		}
		if err := s.rdb.HSet(ctx, s.keys.feeds(), spec.Name, strconv.Itoa(spec.FeedMaxLen)).Err(); err != nil {
			return fmt.Errorf("redisstore: register the change feed of %s: %w", spec.Name, err)
		}
	}
	s.mu.Lock()
	s.shards[spec.Name] = spec.Shards
	s.mu.Unlock()
	return nil
}

// Queues implements persistence.Store.
func (s *Store) Queues(ctx context.Context) ([]persistence.QueueSpec, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.queues()).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list queues: %w", err)
	}
	out := make([]persistence.QueueSpec, 0, len(m))
	for name, v := range m {
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		out = append(out, persistence.QueueSpec{Name: name, Shards: n})
	}
	slices.SortFunc(out, func(a, b persistence.QueueSpec) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// shardsOf returns the shard count of a registered queue.
func (s *Store) shardsOf(ctx context.Context, queue string) (int, error) {
	s.mu.RLock()
	n, ok := s.shards[queue]
	s.mu.RUnlock()
	if ok {
		return n, nil
	}
	if err := persistence.ValidateQueueName(queue); err != nil {
		return 0, err
	}
	v, err := s.rdb.HGet(ctx, s.keys.queues(), queue).Result()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("%w: %s", persistence.ErrUnknownQueue, queue)
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: look up queue %s: %w", queue, err)
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("redisstore: queue %s has a corrupt shard count %q", queue, v)
	}
	s.mu.Lock()
	s.shards[queue] = n
	s.mu.Unlock()
	return n, nil
}

func (s *Store) shardKeys(ctx context.Context, ref persistence.ShardRef) (shardKeys, error) {
	n, err := s.shardsOf(ctx, ref.Queue)
	if err != nil {
		return shardKeys{}, err
	}
	if ref.Shard < 0 || ref.Shard >= n {
		return shardKeys{}, &persistence.FieldError{Field: "shard", Index: -1, Reason: fmt.Sprintf("%d is not a shard of %s (0..%d)", ref.Shard, ref.Queue, n-1)}
	}
	return s.keysOf(ref), nil
}

// keysOf returns the keys of a shard of a registered queue, built on first
// use and cached. The keys are never written once built (callers that add
// keys copy them: shardKeys.with), so they can be shared.
func (s *Store) keysOf(ref persistence.ShardRef) shardKeys {
	s.mu.RLock()
	sk, ok := s.sks[ref]
	s.mu.RUnlock()
	if ok {
		return sk
	}
	sk = s.keys.shard(ref.Queue, ref.Shard)
	s.mu.Lock()
	if s.sks == nil {
		s.sks = map[persistence.ShardRef]shardKeys{}
	}
	s.sks[ref] = sk
	s.mu.Unlock()
	return sk
}

// Enqueue implements persistence.Store. Jobs are grouped by shard and sorted
// by id (stable: the jobs of one id keep their order), so that the jobs of
// one call enter the shard's fifo; each shard gets one script call per
// EnqueueChunk jobs, and all calls go out in one pipeline.
func (s *Store) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return err
	}
	if err := persistence.ValidateJobs(jobs, s.cfg.MaxPayloadBytes); err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return err
	}
	now := s.now()

	byShard := make(map[int][]int, shards)
	order := make([]int, 0, shards)
	for i := range jobs {
		sh := persistence.ShardOf(jobs[i].ID, shards)
		if _, ok := byShard[sh]; !ok {
			order = append(order, sh)
		}
		byShard[sh] = append(byShard[sh], i)
	}

	var calls []call
	for _, sh := range order {
		sk := s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh})
		idx := byShard[sh]
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(jobs[a].ID, jobs[b].ID) })
		for start := 0; start < len(idx); start += s.cfg.EnqueueChunk {
			end := min(start+s.cfg.EnqueueChunk, len(idx))
			// A call whose jobs carry headers sends five values per job
			// (mode suffix "h"); others send four, as before.
			withH, per, m := false, 4, mode
			for _, i := range idx[start:end] {
				if len(jobs[i].Headers) > 0 {
					withH, per, m = true, 5, mode+"h"
					break
				}
			}
			args := make([]any, 0, 4+per*(end-start))
			args = append(args, now, m, s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh))
			keys := sk.keys
			if mode == modeUpgrading {
				keys = sk.with()
			}
			for _, i := range idx[start:end] {
				j := &jobs[i]
				args = appendJob(args, j)
				if withH {
					args = append(args, encodeHeaders(j.Headers))
				}
				if mode == modeUpgrading {
					keys = append(keys, sk.v1Payloads(j.ID))
				}
			}
			calls = append(calls, call{s: scriptEnqueue, keys: keys, args: args})
		}
	}
	// A failed enqueue may have written part of the jobs; sending it again is
	// safe (payloads merge, the lower score wins).
	cmds, werr := s.runWrite(ctx, calls)
	if err := firstErr(cmds); err != nil {
		return fmt.Errorf("redisstore: enqueue to %s: %w", queue, err)
	}
	if werr != nil {
		return fmt.Errorf("redisstore: enqueue to %s: %w", queue, werr)
	}
	return nil
}

// appendJob appends a job's four values of enqueue.lua's ARGV.
func appendJob(args []any, j *persistence.NewJob) []any {
	sc := ""
	if j.Score != nil {
		sc = formatFloat(*j.Score)
	}
	at := ""
	if !j.PerformAt.IsZero() {
		at = formatFloat(persistence.UnixSeconds(j.PerformAt))
	}
	payload := j.Payload
	if payload == nil {
		payload = []byte{}
	}
	return append(args, j.ID, payload, sc, at)
}

// EnqueueTick implements persistence.Store: one enqueue.lua call in tick
// mode on the job's shard.
func (s *Store) EnqueueTick(ctx context.Context, queue, name string, tick time.Time, job persistence.NewJob) (bool, error) {
	if name == "" {
		return false, fmt.Errorf("%w: a periodic job needs a name", persistence.ErrInvalid)
	}
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return false, err
	}
	if err := persistence.ValidateJobs([]persistence.NewJob{job}, s.cfg.MaxPayloadBytes); err != nil {
		return false, err
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return false, err
	}
	sh := persistence.ShardOf(job.ID, shards)
	sk := s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh})
	keys := sk.keys
	if mode == modeUpgrading {
		keys = append(sk.with(), sk.v1Payloads(job.ID))
	}
	args := appendJob([]any{s.now(), mode + "t", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh)}, &job)
	args = append(args, name, tick.UnixMilli())
	cmds, werr := s.runWrite(ctx, []call{{s: scriptEnqueue, keys: keys, args: args}})
	n, err := cmds[0].Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: enqueue tick %s of %s: %w", name, queue, err)
	}
	if werr != nil {
		return false, fmt.Errorf("redisstore: enqueue tick %s of %s: %w", name, queue, werr)
	}
	return n > 0, nil
}

// newNonce returns 64 random bits, hex-encoded.
func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// AcquireShard implements persistence.Store.
func (s *Store) AcquireShard(ctx context.Context, ref persistence.ShardRef, owner string, ttl time.Duration) (persistence.Lease, int, error) {
	if err := validOwner(owner); err != nil {
		return persistence.Lease{}, 0, err
	}
	sk, err := s.shardKeys(ctx, ref)
	if err != nil {
		return persistence.Lease{}, 0, err
	}
	cmds, werr := s.runWrite(ctx, []call{{s: scriptAcquire, keys: sk.keys, args: []any{s.now(), owner, ttlMillis(ttl), newNonce()}}})
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
	if v1, _ := res[4].(int64); v1 == 1 {
		n, err := s.restoreV1Inflight(ctx, lease, sk, ttl)
		restored += int64(n)
		if err != nil {
			return lease, int(restored), err
		}
	}
	return lease, int(restored), nil
}

// RenewShard implements persistence.Store.
func (s *Store) RenewShard(ctx context.Context, lease persistence.Lease, ttl time.Duration) error {
	return s.RenewShards(ctx, []persistence.Lease{lease}, ttl)[0]
}

// renewChunk is the most leases one renew_many call renews, so that one
// call keeps Redis busy for a millisecond or so at most.
const renewChunk = 500

// RenewShards implements persistence.Store: one round trip. On standalone
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
		sk, err := s.shardKeys(ctx, l.ShardRef)
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
		sk, err := s.shardKeys(ctx, l.ShardRef)
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

// ReleaseShard implements persistence.Store.
func (s *Store) ReleaseShard(ctx context.Context, lease persistence.Lease) error {
	sk, err := s.shardKeys(ctx, lease.ShardRef)
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

// Advance implements persistence.Store.
func (s *Store) Advance(ctx context.Context, lease persistence.Lease, req persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	var out persistence.AdvanceResult
	if req.Fetch < 0 || req.Fetch > persistence.MaxBatchSize {
		return out, &persistence.FieldError{Field: "batch_size", Index: -1, Reason: fmt.Sprintf("must be between 0 and %d", persistence.MaxBatchSize)}
	}
	if req.Settle < 0 || req.NextSeq <= 0 || req.NextSeq == req.Settle {
		return out, &persistence.FieldError{Field: "seq", Index: -1, Reason: "NextSeq must be positive and differ from Settle"}
	}
	if req.MaxRetryCount < 0 {
		return out, &persistence.FieldError{Field: "max_retry_count", Index: -1, Reason: "must not be negative"}
	}
	if req.MaxPayloads < 0 || req.CallTimeout < 0 || req.CallSize < 0 || req.MaxCalls < 0 {
		return out, &persistence.FieldError{Field: "max_payloads_per_call", Index: -1, Reason: "MaxPayloads, CallTimeout, CallSize and MaxCalls must not be negative"}
	}
	sk, err := s.shardKeys(ctx, lease.ShardRef)
	if err != nil {
		return out, err
	}
	maxp := req.MaxPayloads
	if maxp == 0 {
		maxp = persistence.DefaultMaxPayloadsPerCall
	}
	var timeout any = ""
	if req.CallTimeout > 0 {
		timeout = max(req.CallTimeout.Milliseconds(), 1)
	}
	var calls any = req.CallSize
	if req.MaxCalls > 0 {
		calls = strconv.Itoa(req.CallSize) + ":" + strconv.Itoa(req.MaxCalls)
	}
	v1 := s.checkV1(ctx, lease.ShardRef)
	args := make([]any, 0, 17+3*len(req.Failures)+len(req.Skipped)+len(req.Interrupted))
	// Numbers go as they are: go-redis writes them in decimal, without
	// the string and its boxing strconv would cost.
	args = append(args, s.now(), lease.Token, req.Settle, req.NextSeq, req.Fetch, req.MaxRetryCount, maxp,
		timeout, calls, v1, len(req.Failures))
	for _, f := range req.Failures {
		at := ""
		if !f.RetryAt.IsZero() {
			at = formatFloat(persistence.UnixSeconds(f.RetryAt))
		}
		args = append(args, f.ID, f.Error, at)
	}
	args = append(args, len(req.Skipped))
	for _, id := range req.Skipped {
		args = append(args, id)
	}
	args = append(args, len(req.Interrupted))
	for _, id := range req.Interrupted {
		args = append(args, id)
	}
	if req.Stateful {
		args = append(args, "1", strconv.Itoa(len(req.StateWrites)))
		for _, w := range req.StateWrites {
			if err := persistence.CheckStateSize(w.Data, req.MaxStateBytes); err != nil {
				return out, err
			}
			if w.Delete {
				args = append(args, w.ID, "d", "")
			} else {
				args = append(args, w.ID, "s", w.Data)
			}
		}
		args = append(args, strconv.Itoa(len(req.TimerWrites)))
		for _, w := range req.TimerWrites {
			if w.Clear {
				args = append(args, w.ID, "c", "")
				continue
			}
			if err := persistence.ValidTime(w.At, "timer"); err != nil {
				return out, err
			}
			args = append(args, w.ID, "s", formatFloat(persistence.UnixSeconds(w.At)))
		}
	} else {
		if len(req.StateWrites) > 0 || len(req.TimerWrites) > 0 {
			return out, &persistence.FieldError{Field: "state", Index: -1, Reason: "state writes on a queue that is not stateful"}
		}
		args = append(args, "0", "0", "0")
	}
	// Emits are checked against the default payload limit, as the node
	// checks them before the call; the relay enqueues them under the
	// store's own limit (and drops, logged, what it refuses).
	args, err = appendEmits(args, req.Emits, max(s.cfg.MaxPayloadBytes, persistence.DefaultMaxPayloadBytes))
	if err != nil {
		return out, err
	}
	if req.CheckOutbox {
		args = append(args, "1")
	} else {
		args = append(args, "0")
	}
	if req.FeedMaxLen < 0 {
		return out, &persistence.FieldError{Field: "feed_max_len", Index: -1, Reason: "must not be negative"}
	}
	args = append(args, strconv.Itoa(req.FeedMaxLen))
	cmds, werr := s.runWrite(ctx, []call{{s: scriptAdvance, keys: sk.keys, boxed: sk.boxed, args: args}})
	res, err := cmds[0].Slice()
	if err != nil {
		if isLeaseLost(err) {
			return out, fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
		}
		return out, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if werr != nil {
		// The settle and the fetch are on the master but may not survive
		// a failover: a store failure, so the caller retries (the fetched
		// batch stays in flight and is handed out again).
		return out, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, werr)
	}
	if len(res) != 11 {
		return out, fmt.Errorf("redisstore: advance %s/%d: unexpected reply of %d values", lease.Queue, lease.Shard, len(res))
	}
	if enc, _ := res[0].(string); enc != "" {
		h, jobs, err := decodeBatch(enc)
		if err != nil {
			return out, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, err)
		}
		out.Batch = &persistence.Batch{
			ShardRef:  lease.ShardRef,
			Seq:       h.seq,
			Token:     h.token,
			FetchedAt: persistence.FromUnixSeconds(h.fetchedAt),
			Jobs:      jobs,
		}
		if req.Stateful {
			states, _ := res[9].([]any)
			for i := range jobs {
				var st persistence.State
				if i < len(states) {
					if st, err = decodeState(states[i]); err != nil {
						return out, fmt.Errorf("redisstore: advance %s/%d: state of %q: %w", lease.Queue, lease.Shard, jobs[i].ID, err)
					}
				}
				if jobs[i].State != nil && st.Version != jobs[i].State.Version {
					// A retried Advance whose state changed since: the
					// settle will see the conflict; hand out what the
					// in-flight record holds.
					st.Version = jobs[i].State.Version
				}
				jobs[i].State = &st
			}
		}
	}
	if cs, _ := res[8].([]any); len(cs) > 0 {
		out.Conflicts = make([]string, 0, len(cs))
		for _, c := range cs {
			if id, ok := c.(string); ok {
				out.Conflicts = append(out.Conflicts, id)
			}
		}
	}
	if v, _ := res[1].(string); v == "1" {
		out.More = true
	}
	if v, _ := res[2].(string); v != "" {
		if f, err := parseScore(v); err == nil {
			out.NextDue = persistence.FromUnixSeconds(f)
		}
	}
	if enc, _ := res[3].(string); enc != "" {
		_, dead, err := decodeBatch(enc)
		if err != nil {
			return out, fmt.Errorf("redisstore: advance %s/%d: dead jobs: %w", lease.Queue, lease.Shard, err)
		}
		out.Dead = dead
	}
	if ob, _ := res[10].(int64); ob > 0 {
		out.Outbox = int(ob)
	}
	p, _ := res[4].(int64)
	f, _ := res[5].(int64)
	r, _ := res[6].(int64)
	out.Processed, out.Failed, out.Restored = int(p), int(f), int(r)
	if v1, _ := res[7].(int64); v1 > 0 {
		// Layout 1 data waits in this shard: drain a chunk now, and look
		// again with the next Advance, at once (More): what the chunk
		// moved may be due already, and an owner told nothing is due would
		// wait for a notice or its idle poll. A failure is logged and the
		// next Advance tries again.
		s.v1mu.Lock()
		delete(s.v1checked, lease.ShardRef)
		s.v1mu.Unlock()
		err := s.drainV1(ctx, lease, sk)
		switch {
		case err == nil:
			out.More = true
		case !errors.Is(err, persistence.ErrLeaseLost):
			s.cfg.Logger.Warn("could not move layout 1 data of the shard into layout 2; retrying with the next batch",
				"queue", lease.Queue, "shard", lease.Shard, "err", err)
		}
	}
	return out, nil
}

// TrimMorgue implements persistence.Store.
func (s *Store) TrimMorgue(ctx context.Context, ref persistence.ShardRef, before time.Time, limit int) (int, error) {
	sk, err := s.shardKeys(ctx, ref)
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

func validOwner(owner string) error {
	if owner == "" || len(owner) > 256 {
		return &persistence.FieldError{Field: "owner", Index: -1, Reason: "must be 1 to 256 bytes"}
	}
	return nil
}

func ttlMillis(ttl time.Duration) string {
	return strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
}
