package redisstore_test

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// The previous release's scripts (storage layout 1, commit 104ba99), kept as
// test data: v1Store drives them the way that release's store did, so that
// tests can fill a Redis as a layout 1 cluster would have left it, and play
// the layout 1 nodes of a rolling upgrade. Nothing of it ships.
//
//go:embed testdata/v1/*.lua
var v1Files embed.FS

type v1Script struct{ src, sha string }

func v1ScriptOf(name string) v1Script {
	lib, err := v1Files.ReadFile("testdata/v1/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := v1Files.ReadFile("testdata/v1/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := string(lib) + "\n" + string(body)
	sum := sha1.Sum([]byte(src))
	return v1Script{src: src, sha: hex.EncodeToString(sum[:])}
}

var (
	v1Acquire = v1ScriptOf("acquire")
	v1Renew   = v1ScriptOf("renew")
	v1Release = v1ScriptOf("release")
	v1Advance = v1ScriptOf("advance")
	v1Enqueue = v1ScriptOf("enqueue")
)

func (s v1Script) run(ctx context.Context, c redis.UniversalClient, keys []string, args ...any) *redis.Cmd {
	cmd := c.EvalSha(ctx, s.sha, keys, args...)
	if cmd.Err() != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = c.Eval(ctx, s.src, keys, args...)
	}
	return cmd
}

// v1Store is layout 1's store, as far as tests need it: it registers
// queues, enqueues, and serves shards (acquire, renew, advance, release).
// Other methods are not implemented (calling them panics).
type v1Store struct {
	persistence.Store
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time
}

func newV1Store(rdb redis.UniversalClient, prefix string, now func() time.Time) *v1Store {
	if now == nil {
		now = time.Now
	}
	return &v1Store{rdb: rdb, prefix: prefix, now: now}
}

func (s *v1Store) shardKeys(queue string, shard int) ([]string, string) {
	base := s.prefix + ":{" + queue + ":" + strconv.Itoa(shard) + "}:"
	var keys []string
	for _, n := range []string{"lease", "epoch", "due", "ids", "retries", "errors", "inflight", "stats", "morgue", "morgue_ids", "morgue_errors"} {
		keys = append(keys, base+n)
	}
	return keys, base
}

func (s *v1Store) shards(ctx context.Context, queue string) (int, error) {
	v, err := s.rdb.HGet(ctx, s.prefix+":queues", queue).Result()
	if err != nil {
		return 0, fmt.Errorf("v1: %w: %s", persistence.ErrUnknownQueue, queue)
	}
	return strconv.Atoi(v)
}

func v1Float(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (s *v1Store) RegisterQueue(ctx context.Context, spec persistence.QueueSpec) error {
	return s.rdb.HSetNX(ctx, s.prefix+":queues", spec.Name, strconv.Itoa(spec.Shards)).Err()
}

// Enqueue groups the jobs by shard, 1000 per script call, all calls in one
// pipeline, as layout 1's store did.
func (s *v1Store) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	n, err := s.shards(ctx, queue)
	if err != nil {
		return err
	}
	now := v1Float(persistence.UnixSeconds(s.now()))
	byShard := map[int][]persistence.NewJob{}
	var order []int
	for _, j := range jobs {
		sh := persistence.ShardOf(j.ID, n)
		if _, ok := byShard[sh]; !ok {
			order = append(order, sh)
		}
		byShard[sh] = append(byShard[sh], j)
	}
	// Load the script first, so that the pipeline never meets NOSCRIPT.
	if err := s.rdb.ScriptLoad(ctx, v1Enqueue.src).Err(); err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	for _, sh := range order {
		keys, base := s.shardKeys(queue, sh)
		list := byShard[sh]
		for start := 0; start < len(list); start += 1000 {
			args := []any{base, s.prefix + ":notify:" + queue, strconv.Itoa(sh)}
			for _, j := range list[start:min(start+1000, len(list))] {
				score, at := now, now
				if j.Score != nil {
					score = v1Float(*j.Score)
				}
				if !j.PerformAt.IsZero() {
					at = v1Float(persistence.UnixSeconds(j.PerformAt))
				}
				payload := j.Payload
				if payload == nil {
					payload = []byte{}
				}
				args = append(args, j.ID, payload, score, at)
			}
			pipe.EvalSha(ctx, v1Enqueue.sha, keys, args...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("v1 enqueue: %w", err)
	}
	return nil
}

func (s *v1Store) AcquireShard(ctx context.Context, ref persistence.ShardRef, owner string, ttl time.Duration) (persistence.Lease, int, error) {
	keys, base := s.shardKeys(ref.Queue, ref.Shard)
	res, err := v1Acquire.run(ctx, s.rdb, keys, base, owner, strconv.FormatInt(ttl.Milliseconds(), 10)).Slice()
	if err != nil {
		return persistence.Lease{}, 0, fmt.Errorf("v1 acquire: %w", err)
	}
	if st, _ := res[0].(string); st == "HELD" {
		holder, _ := res[1].(string)
		return persistence.Lease{}, 0, &persistence.LeaseHeldError{ShardRef: ref, Holder: holder}
	}
	token, _ := res[1].(string)
	epoch, _ := res[2].(int64)
	restored, _ := res[3].(int64)
	return persistence.Lease{ShardRef: ref, Owner: owner, Epoch: epoch, Token: token}, int(restored), nil
}

func (s *v1Store) RenewShard(ctx context.Context, l persistence.Lease, ttl time.Duration) error {
	keys, base := s.shardKeys(l.Queue, l.Shard)
	ok, err := v1Renew.run(ctx, s.rdb, keys, base, l.Token, strconv.FormatInt(ttl.Milliseconds(), 10)).Int()
	if err != nil {
		return err
	}
	if ok != 1 {
		return persistence.ErrLeaseLost
	}
	return nil
}

func (s *v1Store) ReleaseShard(ctx context.Context, l persistence.Lease) error {
	keys, base := s.shardKeys(l.Queue, l.Shard)
	n, err := v1Release.run(ctx, s.rdb, keys, base, l.Token, s.prefix+":notify:"+l.Queue, strconv.Itoa(l.Shard)).Int()
	if err != nil {
		return err
	}
	if n < 0 {
		return persistence.ErrLeaseLost
	}
	return nil
}

func (s *v1Store) Advance(ctx context.Context, l persistence.Lease, req persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	var out persistence.AdvanceResult
	keys, base := s.shardKeys(l.Queue, l.Shard)
	now := persistence.UnixSeconds(s.now())
	args := []any{base, l.Token, v1Float(now), strconv.FormatInt(req.Settle, 10), strconv.FormatInt(req.NextSeq, 10),
		strconv.Itoa(req.Fetch), strconv.Itoa(req.MaxRetryCount), strconv.Itoa(len(req.Failures))}
	for _, f := range req.Failures {
		at := now
		if !f.RetryAt.IsZero() {
			at = persistence.UnixSeconds(f.RetryAt)
		}
		args = append(args, f.ID, f.Error, v1Float(at))
	}
	args = append(args, strconv.Itoa(len(req.Skipped)))
	for _, id := range req.Skipped {
		args = append(args, id)
	}
	res, err := v1Advance.run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "LEASE_LOST") {
			return out, persistence.ErrLeaseLost
		}
		return out, fmt.Errorf("v1 advance: %w", err)
	}
	if enc, _ := res[0].(string); enc != "" {
		seq, jobs, err := v1DecodeBatch(enc)
		if err != nil {
			return out, err
		}
		out.Batch = &persistence.Batch{ShardRef: l.ShardRef, Seq: seq, Token: l.Token, Jobs: jobs}
	}
	if enc, _ := res[3].(string); enc != "" {
		_, dead, err := v1DecodeBatch(enc)
		if err != nil {
			return out, err
		}
		out.Dead = dead
	}
	p, _ := res[4].(int64)
	f, _ := res[5].(int64)
	out.Processed, out.Failed = int(p), int(f)
	return out, nil
}

// v1DecodeBatch decodes layout 1's "<len>:<bytes>" batch encoding.
func v1DecodeBatch(s string) (int64, []persistence.Job, error) {
	pos := 0
	next := func() (string, error) {
		c := strings.IndexByte(s[pos:], ':')
		if c < 0 {
			return "", fmt.Errorf("v1: corrupt batch")
		}
		n, err := strconv.Atoi(s[pos : pos+c])
		if err != nil || pos+c+1+n > len(s) {
			return "", fmt.Errorf("v1: corrupt batch")
		}
		f := s[pos+c+1 : pos+c+1+n]
		pos += c + 1 + n
		return f, nil
	}
	var fields [5]string
	for i := range fields {
		f, err := next()
		if err != nil {
			return 0, nil, err
		}
		fields[i] = f
	}
	n, _ := strconv.Atoi(fields[1])
	seq, _ := strconv.ParseInt(fields[3], 10, 64)
	var jobs []persistence.Job
	for range n {
		var j persistence.Job
		var head [5]string
		for i := range head {
			f, err := next()
			if err != nil {
				return 0, nil, err
			}
			head[i] = f
		}
		j.ID = head[0]
		j.RetryCount, _ = strconv.Atoi(head[1])
		at, _ := strconv.ParseFloat(head[2], 64)
		j.PerformAt = persistence.FromUnixSeconds(at)
		j.Error = head[3]
		np, _ := strconv.Atoi(head[4])
		for range np / 2 {
			d, err := next()
			if err != nil {
				return 0, nil, err
			}
			sc, err := next()
			if err != nil {
				return 0, nil, err
			}
			score, _ := strconv.ParseFloat(sc, 64)
			if math.IsNaN(score) {
				return 0, nil, fmt.Errorf("v1: corrupt score")
			}
			j.Payloads = append(j.Payloads, persistence.Payload{Data: []byte(d), Score: score})
		}
		j.PayloadCount = len(j.Payloads)
		jobs = append(jobs, j)
	}
	return seq, jobs, nil
}
