package redisstore

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Stats implements persistence.Store. All shards of all queues are read in
// one pipeline.
func (s *Store) Stats(ctx context.Context, queues ...string) ([]persistence.QueueStats, error) {
	type shardCmds struct {
		length, fresh, morgue *redis.IntCmd
		oldest                *redis.ZSliceCmd
		busy                  *redis.StringCmd
		stats                 *redis.SliceCmd
	}
	counts := make([]int, len(queues))
	pipe := s.rdb.Pipeline()
	var cmds [][]shardCmds
	for qi, q := range queues {
		n, err := s.shardsOf(ctx, q)
		if err != nil {
			return nil, err
		}
		counts[qi] = n
		per := make([]shardCmds, n)
		for sh := range n {
			k := s.keys.shard(q, sh).keys
			per[sh] = shardCmds{
				length: pipe.ZCard(ctx, k[kDue]),
				fresh:  pipe.ZCount(ctx, k[kRetries], "-1", "-1"),
				morgue: pipe.ZCard(ctx, k[kMorgue]),
				oldest: pipe.ZRangeWithScores(ctx, k[kDue], 0, 0),
				busy:   pipe.GetRange(ctx, k[kInflight], 0, 63),
				stats:  pipe.HMGet(ctx, k[kStats], "processed", "failed"),
			}
		}
		cmds = append(cmds, per)
	}
	if len(queues) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: stats: %w", err)
	}
	now := s.now()
	out := make([]persistence.QueueStats, len(queues))
	for qi, q := range queues {
		st := persistence.QueueStats{Name: q, Shards: counts[qi]}
		oldest := math.Inf(1)
		for _, c := range cmds[qi] {
			st.Length += c.length.Val()
			st.Fresh += c.fresh.Val()
			st.MorgueLength += c.morgue.Val()
			if z := c.oldest.Val(); len(z) > 0 && z[0].Score < oldest {
				oldest = z[0].Score
			}
			st.Busy += countOfHeader(c.busy.Val())
			vals := c.stats.Val()
			st.Processed += parseCounter(vals, 0)
			st.Failed += parseCounter(vals, 1)
		}
		st.Retries = st.Length - st.Fresh
		if !math.IsInf(oldest, 1) {
			st.OldestDue = persistence.FromUnixSeconds(oldest)
			st.Lag = max(0, now-oldest)
		}
		out[qi] = st
	}
	return out, nil
}

func parseCounter(vals []any, i int) int64 {
	if i >= len(vals) {
		return 0
	}
	v, _ := vals[i].(string)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// listEntry is one entry of a shard's page, as list.lua returns it.
type listEntry struct {
	id    string
	sort  string
	sortF float64
	at    string
	rc    string
	err   string
	count int64
	flat  []any
}

type listQuery struct {
	view   string
	order  persistence.Order
	opts   persistence.ListOptions
	cursor *cursor
}

// cursor is the position after the last entry of a page.
type cursor struct {
	order persistence.Order
	rev   bool
	score string
	id    string
}

func (c cursor) encode() string {
	rev := "0"
	if c.rev {
		rev = "1"
	}
	raw := "c1\x00" + string(c.order) + "\x00" + rev + "\x00" + c.score + "\x00" + c.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(s string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errors.New("not a cursor of this listing")
	}
	parts := strings.SplitN(string(raw), "\x00", 5)
	if len(parts) != 5 || parts[0] != "c1" || (parts[2] != "0" && parts[2] != "1") {
		return cursor{}, errors.New("not a cursor of this listing")
	}
	if _, err := parseScore(parts[3]); err != nil {
		return cursor{}, errors.New("not a cursor of this listing")
	}
	return cursor{order: persistence.Order(parts[1]), rev: parts[2] == "1", score: parts[3], id: parts[4]}, nil
}

func invalid(field, format string, args ...any) *persistence.FieldError {
	return &persistence.FieldError{Field: field, Index: -1, Reason: fmt.Sprintf(format, args...)}
}

// parseList validates listing options for a view.
func parseList(view string, opts persistence.ListOptions) (listQuery, error) {
	q := listQuery{view: view, order: opts.Order, opts: opts}
	if q.order == "" {
		q.order = persistence.OrderID
	}
	allowed := []persistence.Order{persistence.OrderID, persistence.OrderPerformAt, persistence.OrderRetryCount}
	if view == "morgue" {
		allowed = []persistence.Order{persistence.OrderID, persistence.OrderUpdatedAt}
	}
	if !slices.Contains(allowed, q.order) {
		names := make([]string, len(allowed))
		for i, o := range allowed {
			names[i] = string(o)
		}
		return q, invalid("order", "%q is not one of %s", q.order, strings.Join(names, ", "))
	}
	switch {
	case opts.Limit == 0:
		q.opts.Limit = persistence.DefaultListLimit
	case opts.Limit < 0 || opts.Limit > persistence.MaxListLimit:
		return q, invalid("limit", "must be between 1 and %d", persistence.MaxListLimit)
	}
	switch {
	case opts.Payloads == 0:
		q.opts.Payloads = persistence.DefaultListPayloads
	case opts.Payloads < 0 || opts.Payloads > persistence.MaxLookupPayloads:
		return q, invalid("payloads", "must be between 1 and %d", persistence.MaxLookupPayloads)
	}
	var bounds [2]float64
	for i, b := range []*string{&q.opts.Min, &q.opts.Max} {
		name := [2]string{"min", "max"}[i]
		if q.order == persistence.OrderID {
			if len(*b) > persistence.MaxIDBytes {
				return q, invalid(name, "longer than %d bytes", persistence.MaxIDBytes)
			}
			continue
		}
		switch strings.ToLower(*b) {
		case "", "-inf", "+inf", "inf":
			*b = ""
			bounds[i] = math.Inf(2*i - 1)
			continue
		}
		f, err := strconv.ParseFloat(*b, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return q, invalid(name, "%q is not a finite number", *b)
		}
		*b = formatFloat(f)
		bounds[i] = f
	}
	if q.order != persistence.OrderID && bounds[0] > bounds[1] {
		return q, invalid("min", "greater than max")
	}
	if opts.Cursor != "" {
		c, err := decodeCursor(opts.Cursor)
		if err != nil {
			return q, invalid("cursor", "%v", err)
		}
		if c.order != q.order || c.rev != opts.Rev {
			return q, invalid("cursor", "belongs to a listing in another order or direction")
		}
		q.cursor = &c
	}
	return q, nil
}

// list runs list.lua on every shard of the queue (one pipeline) and merges
// the pages.
func (s *Store) list(ctx context.Context, queue string, q listQuery) ([]listEntry, string, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return nil, "", err
	}
	rev := "0"
	if q.opts.Rev {
		rev = "1"
	}
	hasCursor, cs, cm := "0", "0", ""
	if q.cursor != nil {
		hasCursor, cs, cm = "1", q.cursor.score, q.cursor.id
	}
	calls := make([]call, shards)
	for sh := range shards {
		sk := s.keys.shard(queue, sh)
		calls[sh] = call{keys: sk.keys, args: []any{sk.idBase, q.view, string(q.order), rev,
			q.opts.Min, q.opts.Max, strconv.Itoa(q.opts.Limit), hasCursor, cs, cm, strconv.Itoa(q.opts.Payloads)}}
	}
	cmds, err := scriptList.runPipelined(ctx, s.rdb, calls)
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: list %s: %w", queue, err)
	}

	var all []listEntry
	full := false
	for _, c := range cmds {
		rows, err := c.Slice()
		if err != nil {
			return nil, "", fmt.Errorf("redisstore: list %s: %w", queue, err)
		}
		if len(rows) >= q.opts.Limit {
			full = true
		}
		for _, row := range rows {
			e, err := parseEntry(row)
			if err != nil {
				return nil, "", fmt.Errorf("redisstore: list %s: %w", queue, err)
			}
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b listEntry) int {
		c := 0
		if q.order != persistence.OrderID {
			c = cmp.Compare(a.sortF, b.sortF)
		}
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if q.opts.Rev {
			c = -c
		}
		return c
	})
	next := ""
	if len(all) > q.opts.Limit {
		all = all[:q.opts.Limit]
		full = true
	}
	if full && len(all) > 0 {
		last := all[len(all)-1]
		next = cursor{order: q.order, rev: q.opts.Rev, score: last.sort, id: last.id}.encode()
	}
	return all, next, nil
}

func parseEntry(row any) (listEntry, error) {
	v, ok := row.([]any)
	if !ok || len(v) != 7 {
		return listEntry{}, errors.New("unexpected listing row")
	}
	var e listEntry
	e.id, _ = v[0].(string)
	e.sort, _ = v[1].(string)
	e.at, _ = v[2].(string)
	e.rc, _ = v[3].(string)
	e.err, _ = v[4].(string)
	e.count, _ = v[5].(int64)
	e.flat, _ = v[6].([]any)
	var err error
	if e.sortF, err = parseScore(e.sort); err != nil {
		return e, err
	}
	return e, nil
}

func payloadsOf(flat []any) ([]persistence.Payload, error) {
	out := make([]persistence.Payload, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		data, _ := flat[i].(string)
		sc, _ := flat[i+1].(string)
		score, err := parseScore(sc)
		if err != nil {
			return nil, err
		}
		out = append(out, persistence.Payload{Data: []byte(data), Score: score})
	}
	return out, nil
}

// ListJobs implements persistence.Store.
func (s *Store) ListJobs(ctx context.Context, queue string, opts persistence.ListOptions) (persistence.JobPage, error) {
	q, err := parseList("queue", opts)
	if err != nil {
		return persistence.JobPage{}, err
	}
	rows, next, err := s.list(ctx, queue, q)
	if err != nil {
		return persistence.JobPage{}, err
	}
	page := persistence.JobPage{Jobs: make([]persistence.Job, 0, len(rows)), Next: next}
	for _, e := range rows {
		at, err := parseScore(e.at)
		if err != nil {
			return page, fmt.Errorf("redisstore: list %s: %w", queue, err)
		}
		rc, _ := strconv.Atoi(e.rc)
		ps, err := payloadsOf(e.flat)
		if err != nil {
			return page, fmt.Errorf("redisstore: list %s: %w", queue, err)
		}
		page.Jobs = append(page.Jobs, persistence.Job{
			ID: e.id, Payloads: ps, PayloadCount: int(e.count),
			PerformAt: persistence.FromUnixSeconds(at), RetryCount: rc, Error: e.err,
		})
	}
	return page, nil
}

// ListMorgue implements persistence.Store.
func (s *Store) ListMorgue(ctx context.Context, queue string, opts persistence.ListOptions) (persistence.MorguePage, error) {
	q, err := parseList("morgue", opts)
	if err != nil {
		return persistence.MorguePage{}, err
	}
	rows, next, err := s.list(ctx, queue, q)
	if err != nil {
		return persistence.MorguePage{}, err
	}
	page := persistence.MorguePage{Entries: make([]persistence.MorgueEntry, 0, len(rows)), Next: next}
	for _, e := range rows {
		at, err := parseScore(e.at)
		if err != nil {
			return page, fmt.Errorf("redisstore: list morgue %s: %w", queue, err)
		}
		ps, err := payloadsOf(e.flat)
		if err != nil {
			return page, fmt.Errorf("redisstore: list morgue %s: %w", queue, err)
		}
		page.Entries = append(page.Entries, persistence.MorgueEntry{
			ID: e.id, Payloads: ps, PayloadCount: int(e.count),
			UpdatedAt: persistence.FromUnixSeconds(at), Error: e.err,
		})
	}
	return page, nil
}

// GetJob implements persistence.Store. The queued entry and the in-flight
// record are read in one MULTI/EXEC, so they are consistent.
func (s *Store) GetJob(ctx context.Context, queue, id string) (persistence.JobInfo, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return persistence.JobInfo{}, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return persistence.JobInfo{}, err
	}
	sh := persistence.ShardOf(id, shards)
	sk := s.keys.shard(queue, sh)
	k := sk.keys
	var (
		at       *redis.FloatCmd
		rc       *redis.FloatCmd
		errText  *redis.StringCmd
		payloads *redis.ZSliceCmd
		count    *redis.IntCmd
		inflight *redis.StringCmd
	)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		at = p.ZScore(ctx, k[kDue], id)
		rc = p.ZScore(ctx, k[kRetries], id)
		errText = p.HGet(ctx, k[kErrors], id)
		payloads = p.ZRangeWithScores(ctx, sk.payloads(id), 0, persistence.MaxLookupPayloads-1)
		count = p.ZCard(ctx, sk.payloads(id))
		inflight = p.Get(ctx, k[kInflight])
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return persistence.JobInfo{}, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
	}
	info := persistence.JobInfo{Queue: queue, Shard: sh}
	if at.Err() == nil {
		j := &persistence.Job{ID: id, PerformAt: persistence.FromUnixSeconds(at.Val()), RetryCount: persistence.FreshRetryCount, PayloadCount: int(count.Val())}
		if rc.Err() == nil {
			j.RetryCount = int(rc.Val())
		}
		j.Error = errText.Val()
		for _, z := range payloads.Val() {
			m, _ := z.Member.(string)
			j.Payloads = append(j.Payloads, persistence.Payload{Data: []byte(m), Score: z.Score})
		}
		info.Queued = j
	}
	if enc := inflight.Val(); enc != "" {
		h, jobs, err := decodeBatch(enc)
		if err != nil {
			return info, fmt.Errorf("redisstore: get job %s/%s: in-flight record: %w", queue, id, err)
		}
		for _, j := range jobs {
			if j.ID == id {
				info.InFlight = &persistence.InFlightJob{Job: j, Owner: h.owner, Epoch: h.epoch, Seq: h.seq, FetchedAt: persistence.FromUnixSeconds(h.fetchedAt)}
			}
		}
	}
	if info.Queued == nil && info.InFlight == nil {
		return info, fmt.Errorf("%w: job %q in queue %s", persistence.ErrNotFound, id, queue)
	}
	return info, nil
}

// DeleteJob implements persistence.Store.
func (s *Store) DeleteJob(ctx context.Context, queue, id string) (bool, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return false, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return false, err
	}
	sh := persistence.ShardOf(id, shards)
	sk := s.keys.shard(queue, sh)
	n, err := scriptAction.run(ctx, s.rdb, sk.keys, sk.idBase, "delete", formatFloat(s.now()), id,
		s.keys.channel(queue), strconv.Itoa(sh)).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: delete job %s/%s: %w", queue, id, err)
	}
	return n == 1, nil
}

// ShardOwners implements persistence.Store.
func (s *Store) ShardOwners(ctx context.Context, queue string) ([]persistence.ShardOwner, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	leases := make([]*redis.StringCmd, shards)
	epochs := make([]*redis.StringCmd, shards)
	for sh := range shards {
		k := s.keys.shard(queue, sh).keys
		leases[sh] = pipe.Get(ctx, k[kLease])
		epochs[sh] = pipe.Get(ctx, k[kEpoch])
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: shard owners of %s: %w", queue, err)
	}
	out := make([]persistence.ShardOwner, shards)
	for sh := range shards {
		out[sh].Shard = sh
		if epoch, owner, ok := splitToken(leases[sh].Val()); ok {
			out[sh].Owner, out[sh].Epoch = owner, epoch
		} else {
			out[sh].Epoch, _ = strconv.ParseInt(epochs[sh].Val(), 10, 64)
		}
	}
	return out, nil
}

// Processing implements persistence.Store.
func (s *Store) Processing(ctx context.Context, queue string) ([]persistence.InFlightBatch, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, shards)
	for sh := range shards {
		cmds[sh] = pipe.Get(ctx, s.keys.shard(queue, sh).keys[kInflight])
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: processing of %s: %w", queue, err)
	}
	var out []persistence.InFlightBatch
	for sh, c := range cmds {
		enc := c.Val()
		if enc == "" {
			continue
		}
		h, jobs, err := decodeBatch(enc)
		if err != nil {
			return nil, fmt.Errorf("redisstore: processing of %s/%d: %w", queue, sh, err)
		}
		out = append(out, persistence.InFlightBatch{
			Shard: sh, Owner: h.owner, Epoch: h.epoch, Seq: h.seq,
			FetchedAt: persistence.FromUnixSeconds(h.fetchedAt), Jobs: jobs,
		})
	}
	return out, nil
}

// PerformAllNow implements persistence.Store.
func (s *Store) PerformAllNow(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "perform all now", func(sk shardKeys, sh int, now string) []any {
		return []any{sk.idBase, "perform_now", now, strconv.Itoa(actionChunk), s.keys.channel(queue), strconv.Itoa(sh)}
	}, scriptAction)
}

// KillFailed implements persistence.Store.
func (s *Store) KillFailed(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "kill failed", func(sk shardKeys, sh int, now string) []any {
		return []any{sk.idBase, "kill_failed", now, strconv.Itoa(actionChunk), s.keys.channel(queue), strconv.Itoa(sh)}
	}, scriptAction)
}

// DeleteFailed implements persistence.Store.
func (s *Store) DeleteFailed(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "delete failed", func(sk shardKeys, sh int, now string) []any {
		return []any{sk.idBase, "delete_failed", now, strconv.Itoa(actionChunk), s.keys.channel(queue), strconv.Itoa(sh)}
	}, scriptAction)
}

// RequeueMorgueAll implements persistence.Store.
func (s *Store) RequeueMorgueAll(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "requeue morgue", func(sk shardKeys, sh int, now string) []any {
		return []any{sk.idBase, "requeue", now, s.keys.channel(queue), strconv.Itoa(sh), "first", strconv.Itoa(actionChunk)}
	}, scriptMorgue)
}

// DeleteMorgueAll implements persistence.Store.
func (s *Store) DeleteMorgueAll(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "delete morgue", func(sk shardKeys, sh int, now string) []any {
		return []any{sk.idBase, "delete", now, s.keys.channel(queue), strconv.Itoa(sh), "first", strconv.Itoa(actionChunk)}
	}, scriptMorgue)
}

// eachShard runs a bounded bulk script on every shard of the queue, one
// pipeline per round, until every shard answers less than a full chunk.
// Each call is atomic; the whole action is not (as in Lowkiq), but it is
// synchronous and reports how many ids it changed.
func (s *Store) eachShard(ctx context.Context, queue, what string, argsOf func(shardKeys, int, string) []any, sc *script) (int, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return 0, err
	}
	now := formatFloat(s.now())
	pending := make([]int, shards)
	for i := range pending {
		pending[i] = i
	}
	total := 0
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("redisstore: %s in %s: %w", what, queue, err)
		}
		calls := make([]call, len(pending))
		for i, sh := range pending {
			sk := s.keys.shard(queue, sh)
			calls[i] = call{keys: sk.keys, args: argsOf(sk, sh, now)}
		}
		cmds, err := sc.runPipelined(ctx, s.rdb, calls)
		if err != nil {
			return total, fmt.Errorf("redisstore: %s in %s: %w", what, queue, err)
		}
		var next []int
		for i, c := range cmds {
			n, _ := c.Int()
			total += n
			if n >= actionChunk {
				next = append(next, pending[i])
			}
		}
		pending = next
	}
	return total, nil
}

// RequeueMorgue implements persistence.Store.
func (s *Store) RequeueMorgue(ctx context.Context, queue string, ids []string) (int, error) {
	return s.morgueIDs(ctx, queue, "requeue", ids)
}

// DeleteMorgue implements persistence.Store.
func (s *Store) DeleteMorgue(ctx context.Context, queue string, ids []string) (int, error) {
	return s.morgueIDs(ctx, queue, "delete", ids)
}

func (s *Store) morgueIDs(ctx context.Context, queue, op string, ids []string) (int, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return 0, err
	}
	byShard := map[int][]string{}
	for i, id := range ids {
		if err := persistence.ValidateID(id, i); err != nil {
			err.(*persistence.FieldError).Field = "ids"
			return 0, err
		}
		sh := persistence.ShardOf(id, shards)
		byShard[sh] = append(byShard[sh], id)
	}
	now := formatFloat(s.now())
	total := 0
	for sh, list := range byShard {
		sk := s.keys.shard(queue, sh)
		for start := 0; start < len(list); start += idChunk {
			chunk := list[start:min(start+idChunk, len(list))]
			args := []any{sk.idBase, op, now, s.keys.channel(queue), strconv.Itoa(sh), "ids", "0"}
			for _, id := range chunk {
				args = append(args, id)
			}
			n, err := scriptMorgue.run(ctx, s.rdb, sk.keys, args...).Int()
			if err != nil {
				return total, fmt.Errorf("redisstore: %s morgue entries of %s: %w", op, queue, err)
			}
			total += n
		}
	}
	return total, nil
}

func sortSpecs(specs []persistence.QueueSpec) {
	slices.SortFunc(specs, func(a, b persistence.QueueSpec) int { return strings.Compare(a.Name, b.Name) })
}
