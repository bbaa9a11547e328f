package redisstore

import (
	"context"
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

	mu sync.RWMutex // guards shapes, moved and sks
	// shapes caches each queue's shape (shape.go), read once.
	shapes map[string]persistence.QueueShape
	// retired holds, per queue, the generation its last reshard drained,
	// while the registry names it (relayShape).
	retired map[string]retiredGen
	// moved holds the shards of a drained generation known drained
	// (RESHARDED): their ids go to their current shards.
	moved map[persistence.ShardRef]bool
	// sks caches the keys of the shards served so far, built once: an
	// Advance uses them on every call (one string per key otherwise).
	sks map[persistence.ShardRef]shardKeys

	upgrade upgradeState // the upgrade from layout 1 (migrate.go)

	feedWait feedWatchers // the change feed's waiting reads (feedwait.go)

	scriptsLoaded atomic.Bool // LoadScripts succeeded once

	notices atomic.Int32 // noticeMode, once known (notice.go)

	// epochSeen is the highest fencing epoch the store has seen, of any
	// shard: those it acquired and those ShardOwners read (every node's
	// orphan sweep reads its queues' shards about twice a second). Every
	// acquisition asks for an epoch above it (lease.go).
	epochSeen atomic.Int64
	// epochOffset, set only by tests (export_test.go) before any call, is
	// added to Redis's clock for epochs: a master whose clock is behind.
	epochOffset int64

	wait *waitSpec // the WAIT after writes, in the replicated mode

	// afterOutboxRead, set only by tests (export_test.go) before any call,
	// runs in RelayOutbox between reading the outbox and relaying it.
	afterOutboxRead func()
	// drainStage, set only by tests (export_test.go) before any call, is
	// called by DrainShard after it exported an entry ("exported") and
	// after it imported it ("imported"), before the entry is confirmed.
	drainStage func(stage string)
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
		rdb:     rdb,
		cfg:     c,
		keys:    keyspace{prefix: c.Prefix},
		count:   &counter{},
		shapes:  map[string]persistence.QueueShape{},
		retired: map[string]retiredGen{},
		moved:   map[persistence.ShardRef]bool{},
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

// Ping implements persistence.NodeStore.
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

// RegisterQueue implements persistence.QueueStore. On a store no release wrote
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
	shape, err := s.cacheShape(spec.Name, got)
	if err != nil {
		return fmt.Errorf("redisstore: register queue %s: %w", spec.Name, err)
	}
	if _, plain := strconv.Atoi(got); got != want && plain == nil {
		// Never resharded: the count is the queue's, fixed until a
		// reshard changes it.
		return fmt.Errorf("%w: queue %s has %s shards in the store, the configuration says %d (orderly queues reshard changes it)",
			persistence.ErrShardCountMismatch, spec.Name, got, spec.Shards)
	}
	// A queue resharded since has the shards of its shape, whatever the
	// configuration says (docs/contract.md §3.17).
	if spec.Stateful {
		if spec.FeedMaxLen < 0 {
			return &persistence.FieldError{Field: "feed_max_len", Index: -1, Reason: "must not be negative"}
		}
		if err := s.rdb.HSet(ctx, s.keys.feeds(), spec.Name, strconv.Itoa(spec.FeedMaxLen)).Err(); err != nil {
			return fmt.Errorf("redisstore: register the change feed of %s: %w", spec.Name, err)
		}
	}
	if err := s.recordDedupWindow(ctx, spec, shape); err != nil {
		return err
	}
	return nil
}

// recordDedupWindow writes the queue's dedup window into each shard's meta
// (field "dw", ms; removed when off), where enqueue.lua reads it in the
// shard's slot (docs/storage.md §2): producers do not know queue settings.
// The last registration wins.
func (s *Store) recordDedupWindow(ctx context.Context, spec persistence.QueueSpec, shape persistence.QueueShape) error {
	if spec.DedupWindow < 0 {
		return &persistence.FieldError{Field: "dedup_window", Index: -1, Reason: "must not be negative"}
	}
	ms := spec.DedupWindow.Milliseconds()
	if spec.DedupWindow > 0 && ms == 0 {
		ms = 1
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, ref := range shape.Refs(spec.Name) {
			meta := s.keysOf(ref).keys[kMeta]
			if ms > 0 {
				p.HSet(ctx, meta, "dw", strconv.FormatInt(ms, 10))
			} else {
				p.HDel(ctx, meta, "dw")
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: record the dedup window of %s: %w", spec.Name, err)
	}
	return nil
}

// Queues implements persistence.QueueStore.
func (s *Store) Queues(ctx context.Context) ([]persistence.QueueSpec, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.queues()).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list queues: %w", err)
	}
	out := make([]persistence.QueueSpec, 0, len(m))
	for name, v := range m {
		sh, err := parseShape(v)
		if err != nil {
			continue
		}
		out = append(out, persistence.QueueSpec{Name: name, Shards: sh.Current.Count})
	}
	slices.SortFunc(out, func(a, b persistence.QueueSpec) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// shardsOf returns the shard count of a registered queue whose shards are
// 0 to count-1: every queue until a reshard. The operations that walk a
// queue's shards by number refuse a queue a reshard moved (its shards
// start elsewhere, or two generations hold its ids) with ErrResharding.
func (s *Store) shardsOf(ctx context.Context, queue string) (int, error) {
	sh, err := s.shapeOf(ctx, queue)
	if err != nil {
		return 0, err
	}
	if sh.Resharding() || sh.Current.Base != 0 {
		return 0, fmt.Errorf("%w: queue %s (shape %s)", persistence.ErrResharding, queue, sh)
	}
	return sh.Current.Count, nil
}

func (s *Store) shardKeys(ctx context.Context, ref persistence.ShardRef) (shardKeys, error) {
	sh, err := s.shapeOf(ctx, ref.Queue)
	if err != nil {
		return shardKeys{}, err
	}
	if !sh.Contains(ref.Shard) {
		// The cached shape may be older than the shard (a reshard started
		// since): read it again before refusing.
		if sh, err = s.refreshShape(ctx, ref.Queue); err != nil {
			return shardKeys{}, err
		}
	}
	if !sh.Contains(ref.Shard) {
		return shardKeys{}, &persistence.FieldError{Field: "shard", Index: -1, Reason: fmt.Sprintf("%d is not a shard of %s (%s)", ref.Shard, ref.Queue, describeShards(sh))}
	}
	return s.keysOf(ref), nil
}

// leasedKeys returns the keys of a shard an owner calls about: any shard
// number of a registered queue, so that an owner still holding the lease of
// a shard a reshard drained (no longer in the queue's shape) can settle,
// renew and release it. AcquireShard takes only shards of the shape
// (shardKeys).
func (s *Store) leasedKeys(ctx context.Context, ref persistence.ShardRef) (shardKeys, error) {
	if _, err := s.shapeOf(ctx, ref.Queue); err != nil {
		return shardKeys{}, err
	}
	if ref.Shard < 0 || ref.Shard >= 2*persistence.MaxShards {
		return shardKeys{}, &persistence.FieldError{Field: "shard", Index: -1, Reason: fmt.Sprintf("%d is not a shard number", ref.Shard)}
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

// describeShards spells the shard numbers of a shape for an error.
func describeShards(sh persistence.QueueShape) string {
	r := func(x persistence.ShardRange) string {
		return strconv.Itoa(x.Base) + ".." + strconv.Itoa(x.Base+x.Count-1)
	}
	if sh.Resharding() {
		return r(sh.From) + " and " + r(sh.Current)
	}
	return r(sh.Current)
}
