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

// scanCount is the HSCAN count of one scan.lua call.
const scanCount = 1024

// Stats implements persistence.Store: one stats.lua call per shard, all in
// one pipeline.
func (s *Store) Stats(ctx context.Context, queues ...string) ([]persistence.QueueStats, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	counts := make([]int, len(queues))
	var calls []call
	for qi, q := range queues {
		n, err := s.shardsOf(ctx, q)
		if err != nil {
			return nil, err
		}
		counts[qi] = n
		for sh := range n {
			calls = append(calls, call{s: scriptStats, keys: s.keys.shard(q, sh).keys, args: []any{now, mode}})
		}
	}
	cmds := runAll(ctx, s.rdb, calls)
	if err := firstErr(cmds); err != nil {
		return nil, fmt.Errorf("redisstore: stats: %w", err)
	}
	ctl, err := s.Controls(ctx, queues...)
	if err != nil {
		return nil, fmt.Errorf("redisstore: stats: %w", err)
	}
	out := make([]persistence.QueueStats, len(queues))
	i := 0
	for qi, q := range queues {
		st := persistence.QueueStats{Name: q, Shards: counts[qi], ShardLag: make([]float64, counts[qi]), Paused: ctl[qi].Paused}
		oldest, latest := math.Inf(1), math.Inf(-1)
		for sh := range counts[qi] {
			v, _ := cmds[i].Slice()
			i++
			if len(v) != 8 {
				return nil, fmt.Errorf("redisstore: stats of %s: unexpected reply", q)
			}
			length, _ := v[0].(int64)
			retries, _ := v[1].(int64)
			morgue, _ := v[2].(int64)
			busy, _ := v[4].(int64)
			processed, _ := v[5].(int64)
			failed, _ := v[6].(int64)
			st.Length += length
			st.Retries += retries
			st.MorgueLength += morgue
			st.Busy += busy
			st.Processed += processed
			st.Failed += failed
			shardOldest, shardNow := math.Inf(1), math.Inf(-1)
			if o, _ := v[3].(string); o != "" {
				if f, err := parseScore(o); err == nil {
					shardOldest = f
					oldest = min(oldest, f)
				}
			}
			if n, _ := v[7].(string); n != "" {
				if f, err := parseScore(n); err == nil {
					shardNow = f
					latest = max(latest, f)
				}
			}
			if !math.IsInf(shardOldest, 1) && !math.IsInf(shardNow, -1) {
				st.ShardLag[sh] = max(0, shardNow-shardOldest)
			}
		}
		st.Fresh = st.Length - st.Retries
		if !math.IsInf(oldest, 1) {
			st.OldestDue = persistence.FromUnixSeconds(oldest)
			st.Lag = max(0, latest-oldest)
		}
		out[qi] = st
	}
	return out, nil
}

// listEntry is one row of a listing.
type listEntry struct {
	id    string
	sort  string
	sortF float64
	rec   record
}

type listQuery struct {
	view   string // "q" or "m"
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

// parseList validates listing options for a view ("q" or "m").
func parseList(view string, opts persistence.ListOptions) (listQuery, error) {
	q := listQuery{view: view, order: opts.Order, opts: opts}
	if q.order == "" {
		q.order = persistence.OrderID
	}
	allowed := []persistence.Order{persistence.OrderID, persistence.OrderPerformAt, persistence.OrderRetryCount}
	if view == "m" {
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

// list returns one page of a listing, merged across the queue's shards, and
// the cursor of the next page.
func (s *Store) list(ctx context.Context, queue string, q listQuery) ([]listEntry, string, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return nil, "", err
	}
	var rows []listEntry
	var more bool
	switch q.order {
	case persistence.OrderID:
		rows, more, err = s.scanPage(ctx, queue, shards, q, false)
	case persistence.OrderRetryCount:
		rows, more, err = s.retryPage(ctx, queue, shards, q)
	default:
		view := "perform_at"
		if q.order == persistence.OrderUpdatedAt {
			view = "updated_at"
		}
		rows, more, err = s.indexPage(ctx, queue, shards, q, view, q.opts.Min, q.opts.Max, q.cursor)
	}
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: list %s: %w", queue, err)
	}
	next := ""
	if more && len(rows) > 0 {
		last := rows[len(rows)-1]
		next = cursor{order: q.order, rev: q.opts.Rev, score: last.sort, id: last.id}.encode()
	}
	if err := s.fillPayloads(ctx, queue, shards, q, rows); err != nil {
		return nil, "", fmt.Errorf("redisstore: list %s: %w", queue, err)
	}
	return rows, next, nil
}

// sortRows orders rows by (sort key, id), or by id only.
func sortRows(rows []listEntry, byID, rev bool) {
	slices.SortFunc(rows, func(a, b listEntry) int {
		c := 0
		if !byID {
			c = cmp.Compare(a.sortF, b.sortF)
		}
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if rev {
			c = -c
		}
		return c
	})
}

// indexPage reads a page of list.lua's view from every shard and merges them.
func (s *Store) indexPage(ctx context.Context, queue string, shards int, q listQuery, view, lo, hi string, cur *cursor) ([]listEntry, bool, error) {
	rev := "0"
	if q.opts.Rev {
		rev = "1"
	}
	hasCursor, cs, cm := "0", "0", ""
	if cur != nil {
		hasCursor, cs, cm = "1", cur.score, cur.id
	}
	calls := make([]call, shards)
	for sh := range shards {
		calls[sh] = call{s: scriptList, keys: s.keys.shard(queue, sh).keys, args: []any{
			view, rev, lo, hi, strconv.Itoa(q.opts.Limit), hasCursor, cs, cm, strconv.Itoa(q.opts.Payloads)}}
	}
	cmds := runAll(ctx, s.rdb, calls)
	if err := firstErr(cmds); err != nil {
		return nil, false, err
	}
	var all []listEntry
	more := false
	for _, c := range cmds {
		v, _ := c.Slice()
		if len(v) >= q.opts.Limit {
			more = true
		}
		for _, row := range v {
			e, err := s.parseRow(row, q.view == "m")
			if err != nil {
				return nil, false, err
			}
			all = append(all, e)
		}
	}
	sortRows(all, false, q.opts.Rev)
	if len(all) > q.opts.Limit {
		all, more = all[:q.opts.Limit], true
	}
	return all, more, nil
}

// parseRow decodes a list.lua row {id, sort, record, overflow}.
func (s *Store) parseRow(row any, morgue bool) (listEntry, error) {
	v, ok := row.([]any)
	if !ok || len(v) != 4 {
		return listEntry{}, errors.New("unexpected listing row")
	}
	var e listEntry
	e.id, _ = v[0].(string)
	e.sort, _ = v[1].(string)
	var err error
	if e.sortF, err = parseScore(e.sort); err != nil {
		return e, err
	}
	raw, _ := v[2].(string)
	if e.rec, err = decodeRecord(raw, morgue); err != nil {
		return e, err
	}
	flat, _ := v[3].([]any)
	ps, err := payloadsOf(flat)
	if err != nil {
		return e, err
	}
	e.rec.more = ps
	return e, nil
}

// retryPage pages through the queue by retry count: the fresh band
// (retry count -1, in id order, from a scan) and the failed band (the
// retries index), in order.
func (s *Store) retryPage(ctx context.Context, queue string, shards int, q listQuery) ([]listEntry, bool, error) {
	lo, hi := math.Inf(-1), math.Inf(1)
	if q.opts.Min != "" {
		lo, _ = strconv.ParseFloat(q.opts.Min, 64)
	}
	if q.opts.Max != "" {
		hi, _ = strconv.ParseFloat(q.opts.Max, 64)
	}
	freshIn := lo <= -1 && hi >= -1
	failedLo := formatFloat(math.Max(lo, 0))
	failedIn := hi >= 0
	var cur *cursor
	if q.cursor != nil {
		c := *q.cursor
		cur = &c
	}
	curScore := func() float64 {
		f, _ := strconv.ParseFloat(cur.score, 64)
		return f
	}
	fresh := func(limit int, c *cursor) ([]listEntry, bool, error) {
		fq := q
		fq.opts.Limit = limit
		fq.cursor = c
		fq.opts.Min, fq.opts.Max = "", ""
		rows, more, err := s.scanPage(ctx, queue, shards, fq, true)
		for i := range rows {
			rows[i].sort, rows[i].sortF = "-1", -1
		}
		return rows, more, err
	}
	failed := func(limit int, c *cursor) ([]listEntry, bool, error) {
		if !failedIn {
			return nil, false, nil
		}
		fq := q
		fq.opts.Limit = limit
		return s.indexPage(ctx, queue, shards, fq, "retries", failedLo, q.opts.Max, c)
	}
	var rows []listEntry
	if !q.opts.Rev {
		if freshIn && (cur == nil || curScore() < 0) {
			r, more, err := fresh(q.opts.Limit, cur)
			if err != nil || more {
				return r, more, err
			}
			rows, cur = r, nil
		}
		if cur != nil && curScore() < 0 {
			cur = nil
		}
		r, more, err := failed(q.opts.Limit-len(rows), cur)
		if len(rows) == q.opts.Limit {
			return rows, true, nil
		}
		return append(rows, r...), more, err
	}
	if cur == nil || curScore() >= 0 {
		r, more, err := failed(q.opts.Limit, cur)
		if err != nil || more {
			return r, more, err
		}
		rows, cur = r, nil
	}
	if !freshIn || len(rows) == q.opts.Limit {
		return rows, len(rows) == q.opts.Limit && freshIn, nil
	}
	r, more, err := fresh(q.opts.Limit-len(rows), cur)
	return append(rows, r...), more, err
}

// scanPage pages through a records hash in id order: every shard's hash is
// scanned (scan.lua, bounded calls), keeping the best ids seen; the bounds
// sent with each call tighten as the page fills. O(records) per page.
func (s *Store) scanPage(ctx context.Context, queue string, shards int, q listQuery, freshOnly bool) ([]listEntry, bool, error) {
	limit := q.opts.Limit
	rev := q.opts.Rev
	// Bounds: lo < id < hi, each inclusive or not; "" = none.
	lo, loIn, hi, hiIn := q.opts.Min, true, q.opts.Max, true
	if q.cursor != nil {
		c := q.cursor.id
		if !rev && (lo == "" || c >= lo) {
			lo, loIn = c, false
		}
		if rev && (hi == "" || c <= hi) {
			hi, hiIn = c, false
		}
	}
	// Exact lookups (min = max) read the one record.
	if q.opts.Min != "" && q.opts.Min == q.opts.Max && q.cursor == nil {
		return s.exactRow(ctx, queue, shards, q, freshOnly)
	}
	var best []listEntry               // sorted, at most limit+1
	better := func(a, b string) bool { // a comes before b in the listing
		if rev {
			return a > b
		}
		return a < b
	}
	type shardScan struct {
		sh     int
		cursor string
	}
	pending := make([]shardScan, shards)
	for sh := range shards {
		pending[sh] = shardScan{sh: sh, cursor: "0"}
	}
	view := q.view
	fresh := "0"
	if freshOnly {
		fresh = "1"
	}
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		clo, cloIn, chi, chiIn := lo, loIn, hi, hiIn
		if len(best) > limit {
			t := best[limit].id
			if rev {
				clo, cloIn = t, false
			} else {
				chi, chiIn = t, false
			}
		}
		calls := make([]call, len(pending))
		for i, p := range pending {
			calls[i] = call{s: scriptScan, keys: s.keys.shard(queue, p.sh).keys, args: []any{
				view, p.cursor, strconv.Itoa(scanCount), clo, flag(cloIn), chi, flag(chiIn), fresh}}
		}
		cmds := runAll(ctx, s.rdb, calls)
		if err := firstErr(cmds); err != nil {
			return nil, false, err
		}
		var next []shardScan
		for i, c := range cmds {
			v, _ := c.Slice()
			if len(v) == 0 {
				return nil, false, errors.New("unexpected scan reply")
			}
			nc, _ := v[0].(string)
			for j := 1; j+1 < len(v); j += 2 {
				id, _ := v[j].(string)
				raw, _ := v[j+1].(string)
				if len(best) > limit && !better(id, best[limit].id) {
					continue
				}
				rec, err := decodeRecord(raw, view == "m")
				if err != nil {
					return nil, false, err
				}
				pos, _ := slices.BinarySearchFunc(best, id, func(e listEntry, t string) int {
					if e.id == t {
						return 0
					}
					if better(e.id, t) {
						return -1
					}
					return 1
				})
				best = slices.Insert(best, pos, listEntry{id: id, sort: "0", rec: rec})
				if len(best) > limit+1 {
					best = best[:limit+1]
				}
			}
			if nc != "0" {
				next = append(next, shardScan{sh: pending[i].sh, cursor: nc})
			}
		}
		pending = next
	}
	more := len(best) > limit
	if more {
		best = best[:limit]
	}
	return best, more, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// exactRow is the listing of one id (min = max): a lookup.
func (s *Store) exactRow(ctx context.Context, queue string, shards int, q listQuery, freshOnly bool) ([]listEntry, bool, error) {
	id := q.opts.Min
	sh := persistence.ShardOf(id, shards)
	v, err := run(ctx, s.rdb, scriptGet, s.keys.shard(queue, sh).keys, id, q.view, "0", "0").Slice()
	if err != nil {
		return nil, false, err
	}
	raw, _ := v[0].(string)
	if raw == "" {
		return nil, false, nil
	}
	rec, err := decodeRecord(raw, q.view == "m")
	if err != nil {
		return nil, false, err
	}
	if freshOnly && rec.rc != persistence.FreshRetryCount {
		return nil, false, nil
	}
	return []listEntry{{id: id, sort: "0", rec: rec}}, false, nil
}

// fillPayloads completes the rows whose listing wants more payloads than
// their records hold inline, reading their overflow.
func (s *Store) fillPayloads(ctx context.Context, queue string, shards int, q listQuery, rows []listEntry) error {
	var calls []call
	var idx []int
	for i, e := range rows {
		have := len(e.rec.shown())
		if e.rec.count() > have && q.opts.Payloads > have {
			sh := persistence.ShardOf(e.id, shards)
			calls = append(calls, call{s: scriptGet, keys: s.keys.shard(queue, sh).keys,
				args: []any{e.id, q.view, strconv.Itoa(q.opts.Payloads), "0"}})
			idx = append(idx, i)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	cmds := runAll(ctx, s.rdb, calls)
	if err := firstErr(cmds); err != nil {
		return err
	}
	for j, c := range cmds {
		v, _ := c.Slice()
		raw, _ := v[0].(string)
		if raw == "" {
			continue
		}
		rec, err := decodeRecord(raw, q.view == "m")
		if err != nil {
			return err
		}
		flat, _ := v[1].([]any)
		ps, err := payloadsOf(flat)
		if err != nil {
			return err
		}
		rec.more = ps
		rows[idx[j]].rec = rec
	}
	return nil
}

// payloadsOf converts a flat {score, payload, ...} list.
func payloadsOf(flat []any) ([]persistence.Payload, error) {
	out := make([]persistence.Payload, 0, len(flat)/3)
	for i := 0; i+2 < len(flat); i += 3 {
		sc, _ := flat[i].(string)
		data, _ := flat[i+1].(string)
		hs, _ := flat[i+2].(string)
		score, err := parseScore(sc)
		if err != nil {
			return nil, err
		}
		h, err := decodeHeaders(hs)
		if err != nil {
			return nil, err
		}
		out = append(out, persistence.Payload{Data: []byte(data), Score: score, Headers: h})
	}
	return out, nil
}

// payloadsOfWithScores converts a flat {payload, score, ...} list (layout
// 1's ZRANGE WITHSCORES).
func payloadsOfWithScores(flat []any) ([]persistence.Payload, error) {
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

func jobOf(e listEntry, npay int) persistence.Job {
	ps := e.rec.shown()
	if len(ps) > npay {
		ps = ps[:npay]
	}
	return persistence.Job{
		ID: e.id, Payloads: ps, PayloadCount: e.rec.count(),
		PerformAt: persistence.FromUnixSeconds(e.rec.at), RetryCount: e.rec.rc, Error: e.rec.err,
	}
}

// ListJobs implements persistence.Store.
func (s *Store) ListJobs(ctx context.Context, queue string, opts persistence.ListOptions) (persistence.JobPage, error) {
	q, err := parseList("q", opts)
	if err != nil {
		return persistence.JobPage{}, err
	}
	rows, next, err := s.list(ctx, queue, q)
	if err != nil {
		return persistence.JobPage{}, err
	}
	page := persistence.JobPage{Jobs: make([]persistence.Job, 0, len(rows)), Next: next}
	for _, e := range rows {
		page.Jobs = append(page.Jobs, jobOf(e, q.opts.Payloads))
	}
	return page, nil
}

// ListMorgue implements persistence.Store.
func (s *Store) ListMorgue(ctx context.Context, queue string, opts persistence.ListOptions) (persistence.MorguePage, error) {
	q, err := parseList("m", opts)
	if err != nil {
		return persistence.MorguePage{}, err
	}
	rows, next, err := s.list(ctx, queue, q)
	if err != nil {
		return persistence.MorguePage{}, err
	}
	page := persistence.MorguePage{Entries: make([]persistence.MorgueEntry, 0, len(rows)), Next: next}
	for _, e := range rows {
		j := jobOf(e, q.opts.Payloads)
		page.Entries = append(page.Entries, persistence.MorgueEntry{
			ID: e.id, Payloads: j.Payloads, PayloadCount: j.PayloadCount,
			UpdatedAt: persistence.FromUnixSeconds(e.rec.at), Error: e.rec.err,
		})
	}
	return page, nil
}

// GetJob implements persistence.Store: the record, its overflow and the
// in-flight record are read by one script, so they are consistent.
func (s *Store) GetJob(ctx context.Context, queue, id string) (persistence.JobInfo, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return persistence.JobInfo{}, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return persistence.JobInfo{}, err
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return persistence.JobInfo{}, err
	}
	sh := persistence.ShardOf(id, shards)
	sk := s.keys.shard(queue, sh)
	keys, v1 := sk.keys, "0"
	if mode == modeUpgrading {
		keys, v1 = sk.with(sk.v1Payloads(id)), "1"
	}
	v, err := run(ctx, s.rdb, scriptGet, keys, id, "q", strconv.Itoa(persistence.MaxLookupPayloads), v1).Slice()
	if err != nil {
		return persistence.JobInfo{}, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
	}
	info := persistence.JobInfo{Queue: queue, Shard: sh}
	if raw, _ := v[0].(string); raw != "" {
		rec, err := decodeRecord(raw, false)
		if err != nil {
			return info, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
		}
		flat, _ := v[1].([]any)
		ps, err := payloadsOf(flat)
		if err != nil {
			return info, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
		}
		rec.more = ps
		j := jobOf(listEntry{id: id, rec: rec}, persistence.MaxLookupPayloads)
		info.Queued = &j
	} else if old, _ := v[3].([]any); len(old) == 5 {
		// Still in layout 1's keys (being upgraded).
		at, _ := old[0].(string)
		rc, _ := old[1].(string)
		errText, _ := old[2].(string)
		count, _ := old[3].(int64)
		flat, _ := old[4].([]any)
		ps, err := payloadsOfWithScores(flat)
		if err != nil {
			return info, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
		}
		atF, _ := parseScore(at)
		rcN, _ := strconv.Atoi(rc)
		info.Queued = &persistence.Job{ID: id, Payloads: ps, PayloadCount: int(count),
			PerformAt: persistence.FromUnixSeconds(atF), RetryCount: rcN, Error: errText}
	}
	if enc, _ := v[2].(string); enc != "" {
		h, jobs, err := decodeBatch(enc)
		if err != nil {
			return info, fmt.Errorf("redisstore: get job %s/%s: in-flight record: %w", queue, id, err)
		}
		for _, j := range jobs {
			if j.ID == id {
				info.InFlight = &persistence.InFlightJob{Job: j, Owner: h.owner, Epoch: h.epoch, Seq: h.seq,
					FetchedAt: persistence.FromUnixSeconds(h.fetchedAt), Deadline: h.bound}
			}
		}
	}
	if len(v) > 4 {
		if raw, _ := v[4].(string); raw != "" {
			st, err := decodeState(raw)
			if err != nil {
				return info, fmt.Errorf("redisstore: get job %s/%s: state: %w", queue, id, err)
			}
			info.State = &st
		}
	}
	if len(v) > 5 {
		if raw, _ := v[5].(string); raw != "" {
			if f, err := parseScore(raw); err == nil {
				info.Timer = persistence.FromUnixSeconds(f)
			}
		}
	}
	// A state tombstone is a trace of the id too: its version is what the
	// next compare-and-set must name (docs/contract.md §11).
	if info.Queued == nil && info.InFlight == nil && info.State == nil && info.Timer.IsZero() {
		return info, fmt.Errorf("%w: job %q in queue %s", persistence.ErrNotFound, id, queue)
	}
	return info, nil
}

// DeleteJob implements persistence.Store. An id with many payloads is
// deleted over several bounded calls.
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
	for {
		res, err := run(ctx, s.rdb, scriptAction, sk.keys, s.now(), "delete", id,
			s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), strconv.Itoa(movePayloads), "0").Slice()
		if err != nil {
			return false, fmt.Errorf("redisstore: delete job %s/%s: %w", queue, id, err)
		}
		done, _ := res[0].(int64)
		partial, _ := res[2].(int64)
		if partial == 0 {
			return done == 1, nil
		}
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("redisstore: delete job %s/%s: %w", queue, id, err)
		}
	}
}

// PerformJobNow implements persistence.Store.
func (s *Store) PerformJobNow(ctx context.Context, queue, id string) (bool, error) {
	return s.jobAction(ctx, queue, id, "perform now", "perform_now_id")
}

// KillJob implements persistence.Store. An id with many payloads is moved
// over several bounded calls, all stamped with the first call's time.
func (s *Store) KillJob(ctx context.Context, queue, id string) (bool, error) {
	return s.jobAction(ctx, queue, id, "kill", "kill_id")
}

// jobAction runs an action of one id (action.lua) until it is done and
// reports whether the id had a queued entry.
func (s *Store) jobAction(ctx context.Context, queue, id, what, action string) (bool, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return false, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return false, err
	}
	sh := persistence.ShardOf(id, shards)
	sk := s.keys.shard(queue, sh)
	now, found := s.now(), false
	for {
		res, err := run(ctx, s.rdb, scriptAction, sk.keys, now, action, id,
			s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), strconv.Itoa(movePayloads), "0").Slice()
		if err != nil {
			return false, fmt.Errorf("redisstore: %s %s/%s: %w", what, queue, id, err)
		}
		seen, _ := res[1].(int64)
		partial, _ := res[2].(int64)
		now, _ = res[4].(string)
		found = found || seen > 0
		if partial == 0 {
			return found, nil
		}
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("redisstore: %s %s/%s: %w", what, queue, id, err)
		}
	}
}

// ShardOwners implements persistence.Store: the holder of each shard's
// lease, a node of the previous release (layout 1) included.
func (s *Store) ShardOwners(ctx context.Context, queue string) ([]persistence.ShardOwner, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	leases := make([]*redis.StringCmd, shards)
	v1leases := make([]*redis.StringCmd, shards)
	epochs := make([]*redis.StringCmd, shards)
	for sh := range shards {
		k := s.keys.shard(queue, sh).keys
		leases[sh] = pipe.Get(ctx, k[kLease])
		v1leases[sh] = pipe.Get(ctx, k[kV1Lease])
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
		} else if v1 := v1leases[sh].Val(); v1 != fence {
			// During a rolling upgrade a node of the previous release
			// (layout 1) may hold the shard: its lease is the owner.
			if epoch, owner, ok := splitToken(v1); ok {
				out[sh].Owner, out[sh].Epoch = owner, epoch
			} else {
				out[sh].Epoch, _ = strconv.ParseInt(epochs[sh].Val(), 10, 64)
			}
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
			FetchedAt: persistence.FromUnixSeconds(h.fetchedAt), Deadline: h.bound, Jobs: jobs,
		})
	}
	return out, nil
}

// PerformAllNow implements persistence.Store.
func (s *Store) PerformAllNow(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "perform all now", scriptAction, func(sh int, now string, held int64) []any {
		return []any{now, "perform_now", strconv.Itoa(actionChunk), s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh),
			strconv.Itoa(movePayloads), strconv.FormatInt(held, 10)}
	})
}

// KillFailed implements persistence.Store.
func (s *Store) KillFailed(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "kill failed", scriptAction, func(sh int, now string, _ int64) []any {
		return []any{now, "kill_failed", strconv.Itoa(actionChunk), s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh),
			strconv.Itoa(movePayloads), "0"}
	})
}

// DeleteFailed implements persistence.Store.
func (s *Store) DeleteFailed(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "delete failed", scriptAction, func(sh int, now string, _ int64) []any {
		return []any{now, "delete_failed", strconv.Itoa(actionChunk), s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh),
			strconv.Itoa(movePayloads), "0"}
	})
}

// RequeueMorgueAll implements persistence.Store.
func (s *Store) RequeueMorgueAll(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "requeue morgue", scriptMorgue, func(sh int, now string, _ int64) []any {
		return []any{now, "requeue", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), "first", strconv.Itoa(actionChunk),
			strconv.Itoa(movePayloads), "0"}
	})
}

// DeleteMorgueAll implements persistence.Store.
func (s *Store) DeleteMorgueAll(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "delete morgue", scriptMorgue, func(sh int, now string, _ int64) []any {
		return []any{now, "delete", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), "first", strconv.Itoa(actionChunk),
			strconv.Itoa(movePayloads), "0"}
	})
}

// eachShard runs a bounded bulk script on every shard of the queue, one
// pipeline per round, until every shard is done. The first call of a shard
// reads the time; its later calls are given that time, so that the action
// sees one "now". Each call is atomic; the whole action is not (as in
// Lowkiq), but it is synchronous and reports how many ids it changed.
//
// action.lua answers {done, seen, partial, held, now}, morgue.lua {done,
// partial, seen}: a shard is done when seen < actionChunk and partial is 0.
func (s *Store) eachShard(ctx context.Context, queue, what string, sc *script, argsOf func(sh int, now string, held int64) []any) (int, error) {
	shards, err := s.shardsOf(ctx, queue)
	if err != nil {
		return 0, err
	}
	type state struct {
		sh   int
		now  string
		held int64
	}
	pending := make([]state, shards)
	for i := range pending {
		pending[i] = state{sh: i, now: s.now()}
	}
	total := 0
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("redisstore: %s in %s: %w", what, queue, err)
		}
		calls := make([]call, len(pending))
		for i, p := range pending {
			calls[i] = call{s: sc, keys: s.keys.shard(queue, p.sh).keys, args: argsOf(p.sh, p.now, p.held)}
		}
		cmds := runAll(ctx, s.rdb, calls)
		if err := firstErr(cmds); err != nil {
			return total, fmt.Errorf("redisstore: %s in %s: %w", what, queue, err)
		}
		var next []state
		for i, c := range cmds {
			v, _ := c.Slice()
			var done, seen, partial int64
			p := pending[i]
			if sc == scriptAction {
				done, _ = v[0].(int64)
				seen, _ = v[1].(int64)
				partial, _ = v[2].(int64)
				held, _ := v[3].(int64)
				p.held += held
				p.now, _ = v[4].(string)
			} else {
				done, _ = v[0].(int64)
				partial, _ = v[1].(int64)
				seen, _ = v[2].(int64)
			}
			total += int(done)
			if seen >= actionChunk || partial > 0 {
				next = append(next, p)
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
	total := 0
	for sh, list := range byShard {
		sk := s.keys.shard(queue, sh)
		for start := 0; start < len(list); start += idChunk {
			chunk := list[start:min(start+idChunk, len(list))]
			now := s.now()
			for {
				args := []any{now, op, s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), "ids", "0", strconv.Itoa(movePayloads), "0"}
				for _, id := range chunk {
					args = append(args, id)
				}
				res, err := run(ctx, s.rdb, scriptMorgue, sk.keys, args...).Int64Slice()
				if err != nil {
					return total, fmt.Errorf("redisstore: %s morgue entries of %s: %w", op, queue, err)
				}
				total += int(res[0])
				if res[1] == 0 {
					break
				}
				if err := ctx.Err(); err != nil {
					return total, fmt.Errorf("redisstore: %s morgue entries of %s: %w", op, queue, err)
				}
			}
		}
	}
	return total, nil
}
