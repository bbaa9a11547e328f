package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
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
	// so that no single call blocks the server for long.
	DefaultEnqueueChunk = 1000
	// actionChunk is how many ids one call of a bulk action handles.
	actionChunk = 500
	// idChunk is how many named ids one morgue call carries.
	idChunk = 500
)

// Config configures a Store. The zero value of each field means its default.
type Config struct {
	// Prefix is put before every key [DefaultPrefix]. It must not contain
	// '{' or '}'.
	Prefix string
	// Now reads the clock used for scores, perform_at and morgue times
	// [time.Now]. Tests inject a controlled clock.
	Now func() time.Time
	// Logger receives the store's logs [slog.Default()].
	Logger *slog.Logger
	// MaxPayloadBytes limits one payload's size
	// [persistence.DefaultMaxPayloadBytes].
	MaxPayloadBytes int
	// EnqueueChunk is the most jobs per enqueue script call
	// [DefaultEnqueueChunk].
	EnqueueChunk int
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
	if out.Now == nil {
		out.Now = time.Now
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
	return out, nil
}

// Store is the Redis implementation of persistence.Store.
type Store struct {
	rdb   redis.UniversalClient
	cfg   Config
	keys  keyspace
	count *counter

	mu     sync.RWMutex   // guards shards
	shards map[string]int // queue name -> shard count, as registered
}

var _ persistence.Store = (*Store)(nil)

// New returns a Store on the given client. It adds a hook to the client that
// counts round trips and commands (see Counters); it does no I/O.
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
	rdb.AddHook(s.count)
	return s, nil
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Counters returns how many round trips and commands went through the store's
// client since it was created.
func (s *Store) Counters() Counters { return s.count.snapshot() }

// LoadScripts loads the store's Lua scripts into the server. Calling it at
// start is optional (a script missing on the server is loaded on first use)
// but surfaces permission problems early.
func (s *Store) LoadScripts(ctx context.Context) error {
	return loadScripts(ctx, s.rdb)
}

// Ping implements persistence.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstore: ping: %w", err)
	}
	return nil
}

func (s *Store) now() float64 { return persistence.UnixSeconds(s.cfg.Now()) }

// RegisterQueue implements persistence.Store.
func (s *Store) RegisterQueue(ctx context.Context, spec persistence.QueueSpec) error {
	if err := persistence.ValidateQueueName(spec.Name); err != nil {
		return err
	}
	if err := persistence.ValidateShards(spec.Shards); err != nil {
		return err
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
	sortSpecs(out)
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

// Enqueue implements persistence.Store. Jobs are grouped by shard; each shard
// gets one script call per EnqueueChunk jobs, and all calls go out in one
// pipeline: one network round trip for the whole batch.
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
	now := s.now()
	nowS := formatFloat(now)
	channel := s.keys.channel(queue)

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
		sk := s.keys.shard(queue, sh)
		idx := byShard[sh]
		for start := 0; start < len(idx); start += s.cfg.EnqueueChunk {
			end := min(start+s.cfg.EnqueueChunk, len(idx))
			args := make([]any, 0, 3+4*(end-start))
			args = append(args, sk.idBase, channel, strconv.Itoa(sh))
			for _, i := range idx[start:end] {
				j := &jobs[i]
				score := nowS
				if j.Score != nil {
					score = formatFloat(*j.Score)
				}
				at := nowS
				if !j.PerformAt.IsZero() {
					at = formatFloat(persistence.UnixSeconds(j.PerformAt))
				}
				payload := j.Payload
				if payload == nil {
					payload = []byte{}
				}
				args = append(args, j.ID, payload, score, at)
			}
			calls = append(calls, call{keys: sk.keys, args: args})
		}
	}

	if _, err := scriptEnqueue.runPipelined(ctx, s.rdb, calls); err != nil {
		return fmt.Errorf("redisstore: enqueue to %s: %w", queue, err)
	}
	return nil
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
	res, err := scriptAcquire.run(ctx, s.rdb, sk.keys, sk.idBase, owner, ttlMillis(ttl)).Slice()
	if err != nil {
		return persistence.Lease{}, 0, fmt.Errorf("redisstore: acquire %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	status, _ := res[0].(string)
	if status == "HELD" {
		holder, _ := res[1].(string)
		_, owner, _ := splitToken(holder)
		var ttl int64
		if len(res) > 2 {
			ttl, _ = res[2].(int64)
		}
		return persistence.Lease{}, 0, &persistence.LeaseHeldError{ShardRef: ref, Holder: owner, TTL: time.Duration(max(ttl, 0)) * time.Millisecond}
	}
	token, _ := res[1].(string)
	epoch, _ := res[2].(int64)
	restored, _ := res[3].(int64)
	return persistence.Lease{ShardRef: ref, Owner: owner, Epoch: epoch, Token: token}, int(restored), nil
}

// RenewShard implements persistence.Store.
func (s *Store) RenewShard(ctx context.Context, lease persistence.Lease, ttl time.Duration) error {
	sk, err := s.shardKeys(ctx, lease.ShardRef)
	if err != nil {
		return err
	}
	ok, err := scriptRenew.run(ctx, s.rdb, sk.keys, sk.idBase, lease.Token, ttlMillis(ttl)).Int()
	if err != nil {
		return fmt.Errorf("redisstore: renew %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if ok != 1 {
		return fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
	}
	return nil
}

// ReleaseShard implements persistence.Store.
func (s *Store) ReleaseShard(ctx context.Context, lease persistence.Lease) error {
	sk, err := s.shardKeys(ctx, lease.ShardRef)
	if err != nil {
		return err
	}
	n, err := scriptRelease.run(ctx, s.rdb, sk.keys, sk.idBase, lease.Token,
		s.keys.channel(lease.Queue), strconv.Itoa(lease.Shard)).Int()
	if err != nil {
		return fmt.Errorf("redisstore: release %s/%d: %w", lease.Queue, lease.Shard, err)
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
	sk, err := s.shardKeys(ctx, lease.ShardRef)
	if err != nil {
		return out, err
	}
	now := s.now()
	args := make([]any, 0, 9+3*len(req.Failures)+len(req.Skipped))
	args = append(args, sk.idBase, lease.Token, formatFloat(now),
		strconv.FormatInt(req.Settle, 10), strconv.FormatInt(req.NextSeq, 10),
		strconv.Itoa(req.Fetch), strconv.Itoa(req.MaxRetryCount), strconv.Itoa(len(req.Failures)))
	for _, f := range req.Failures {
		at := now
		if !f.RetryAt.IsZero() {
			at = persistence.UnixSeconds(f.RetryAt)
		}
		args = append(args, f.ID, f.Error, formatFloat(at))
	}
	args = append(args, strconv.Itoa(len(req.Skipped)))
	for _, id := range req.Skipped {
		args = append(args, id)
	}
	res, err := scriptAdvance.run(ctx, s.rdb, sk.keys, args...).Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "LEASE_LOST") {
			return out, fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
		}
		return out, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if len(res) != 7 {
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
	}
	if v, _ := res[1].(string); v == "1" {
		out.More = true
	}
	if v, _ := res[2].(string); v != "" {
		f, err := parseScore(v)
		if err == nil {
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
	p, _ := res[4].(int64)
	f, _ := res[5].(int64)
	r, _ := res[6].(int64)
	out.Processed, out.Failed, out.Restored = int(p), int(f), int(r)
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
	n, err := scriptMorgue.run(ctx, s.rdb, sk.keys, sk.idBase, "trim", formatFloat(s.now()),
		s.keys.channel(ref.Queue), strconv.Itoa(ref.Shard), "before", strconv.Itoa(limit),
		formatFloat(persistence.UnixSeconds(before))).Int()
	if err != nil {
		return 0, fmt.Errorf("redisstore: trim morgue of %s/%d: %w", ref.Queue, ref.Shard, err)
	}
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
	return s.keys.shard(ref.Queue, ref.Shard), nil
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
