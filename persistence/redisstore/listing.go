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

// listEntry is one row of a listing.
type listEntry struct {
	id    string
	sort  string
	sortF float64
	rec   record
	// sh is the shard the row was read from; -1 for a row of an export
	// entry (listreshard.go), whose record holds every payload it has.
	sh int
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

// ListJobs implements persistence.Inspector.
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

// ListMorgue implements persistence.Inspector.
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
		page.Entries = append(page.Entries, morgueEntryOf(e, q.opts.Payloads))
	}
	return page, nil
}

// morgueEntryOf converts a morgue row, showing at most npay payloads.
func morgueEntryOf(e listEntry, npay int) persistence.MorgueEntry {
	j := jobOf(e, npay)
	m := persistence.MorgueEntry{
		ID: e.id, Payloads: j.Payloads, PayloadCount: j.PayloadCount,
		UpdatedAt: persistence.FromUnixSeconds(e.rec.at), Error: e.rec.err,
	}
	if e.rec.first > 0 {
		m.FirstAt = persistence.FromUnixSeconds(e.rec.first)
	}
	return m
}

// list returns one page of a listing, merged across the queue's shards, and
// the cursor of the next page.
func (s *Store) list(ctx context.Context, queue string, q listQuery) ([]listEntry, string, error) {
	shards, err := s.listSourcesOf(ctx, queue)
	if err != nil {
		return nil, "", err
	}
	kinds := v1Queued
	if q.view == "m" {
		kinds = v1Dead
	}
	if err := s.catchUp(ctx, queue, kinds); err != nil {
		return nil, "", fmt.Errorf("redisstore: list %s: %w", queue, err)
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
func (s *Store) indexPage(ctx context.Context, queue string, shards listSources, q listQuery, view, lo, hi string, cur *cursor) ([]listEntry, bool, error) {
	rev := "0"
	if q.opts.Rev {
		rev = "1"
	}
	hasCursor, cs, cm := "0", "0", ""
	if cur != nil {
		hasCursor, cs, cm = "1", cur.score, cur.id
	}
	replies, items, err := s.readSources(ctx, queue, shards, viewKind(q.view), func(sh int) call {
		return call{s: scriptList, keys: s.keys.shard(queue, sh).keys, args: []any{
			view, rev, lo, hi, strconv.Itoa(q.opts.Limit), hasCursor, cs, cm, strconv.Itoa(q.opts.Payloads)}}
	})
	if err != nil {
		return nil, false, err
	}
	var all []listEntry
	more := false
	for _, c := range replies {
		if c.round == roundNew && len(items) > 0 {
			rows, err := entryIndexRows(items, view, indexBounds{lo: lo, hi: hi, cur: cur, rev: q.opts.Rev})
			if err != nil {
				return nil, false, err
			}
			all, items = append(all, rows...), nil
		}
		v, _ := c.cmd.Slice()
		if len(v) >= q.opts.Limit {
			more = true
		}
		for _, row := range v {
			e, err := s.parseRow(row, q.view == "m")
			if err != nil {
				return nil, false, err
			}
			e.sh = c.sh
			all = append(all, e)
		}
	}
	if shards.resharding() {
		all = lastReadWins(all)
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
func (s *Store) retryPage(ctx context.Context, queue string, shards listSources, q listQuery) ([]listEntry, bool, error) {
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
// While a reshard runs, the drained generation's shards are scanned to
// their end first, then their export entries read, then the current
// generation's shards scanned (listreshard.go).
func (s *Store) scanPage(ctx context.Context, queue string, shards listSources, q listQuery, freshOnly bool) ([]listEntry, bool, error) {
	// Exact lookups (min = max) read the one record.
	if q.opts.Min != "" && q.opts.Min == q.opts.Max && q.cursor == nil {
		return s.exactRow(ctx, queue, shards, q, freshOnly)
	}
	b := boundsOf(q)
	top := &topIDs{limit: q.opts.Limit, rev: q.opts.Rev}
	if shards.resharding() {
		if err := s.scanShards(ctx, queue, shardsIn(shards.from), top, q, b, freshOnly); err != nil {
			return nil, false, err
		}
		items, err := s.exportEntries(ctx, queue, shards.from, viewKind(q.view))
		if err != nil {
			return nil, false, err
		}
		for _, it := range items {
			if err := top.addEntry(it, b, freshOnly); err != nil {
				return nil, false, err
			}
		}
	}
	if err := s.scanShards(ctx, queue, shardsIn(shards.cur), top, q, b, freshOnly); err != nil {
		return nil, false, err
	}
	more := len(top.rows) > top.limit
	if more {
		top.rows = top.rows[:top.limit]
	}
	return top.rows, more, nil
}

// scanShards scans the records hashes of the given shards to their end,
// keeping the best rows in top.
func (s *Store) scanShards(ctx context.Context, queue string, shards []int, top *topIDs, q listQuery, b idBounds, freshOnly bool) error {
	pending := make([]shardScan, len(shards))
	for i, sh := range shards {
		pending[i] = shardScan{sh: sh, cursor: "0"}
	}
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		calls := make([]call, len(pending))
		for i, p := range pending {
			calls[i] = call{s: scriptScan, keys: s.keys.shard(queue, p.sh).keys, args: top.scanArgs(q.view, p.cursor, b, freshOnly)}
		}
		cmds := runAll(ctx, s.rdb, calls)
		if err := firstErr(cmds); err != nil {
			return err
		}
		var next []shardScan
		for i, c := range cmds {
			nc, err := top.take(c, pending[i].sh, q.view == "m")
			if err != nil {
				return err
			}
			if nc != "0" {
				next = append(next, shardScan{sh: pending[i].sh, cursor: nc})
			}
		}
		pending = next
	}
	return nil
}

// shardScan is a shard still to scan and where its scan stands.
type shardScan struct {
	sh     int
	cursor string
}

// idBounds are the bounds of a listing by id: lo < id < hi, each inclusive
// or not; "" = none.
type idBounds struct {
	lo, hi     string
	loIn, hiIn bool
}

// boundsOf returns the bounds of q, moved past its cursor.
func boundsOf(q listQuery) idBounds {
	b := idBounds{lo: q.opts.Min, loIn: true, hi: q.opts.Max, hiIn: true}
	if q.cursor != nil {
		c := q.cursor.id
		if !q.opts.Rev && (b.lo == "" || c >= b.lo) {
			b.lo, b.loIn = c, false
		}
		if q.opts.Rev && (b.hi == "" || c <= b.hi) {
			b.hi, b.hiIn = c, false
		}
	}
	return b
}

// topIDs keeps the first limit+1 rows of a listing by id, in the
// listing's order, from the shards' scans.
type topIDs struct {
	limit int
	rev   bool
	rows  []listEntry // sorted, at most limit+1
}

// before reports whether id a comes before id b in the listing.
func (t *topIDs) before(a, b string) bool {
	if t.rev {
		return a > b
	}
	return a < b
}

// scanArgs returns scan.lua's arguments for a shard whose scan stands at
// cursor: once limit+1 rows are kept, ids past the last one cannot make
// the page, and the bounds exclude them.
func (t *topIDs) scanArgs(view, cursor string, b idBounds, freshOnly bool) []any {
	if len(t.rows) > t.limit {
		last := t.rows[t.limit].id
		if t.rev {
			b.lo, b.loIn = last, false
		} else {
			b.hi, b.hiIn = last, false
		}
	}
	return []any{view, cursor, strconv.Itoa(scanCount), b.lo, flag(b.loIn), b.hi, flag(b.hiIn), flag(freshOnly)}
}

// take keeps the rows of one scan.lua reply of shard sh that make the
// page, and returns the shard's next cursor ("0": done).
func (t *topIDs) take(c *redis.Cmd, sh int, morgue bool) (string, error) {
	v, _ := c.Slice()
	if len(v) == 0 {
		return "", errors.New("unexpected scan reply")
	}
	next, _ := v[0].(string)
	for j := 1; j+1 < len(v); j += 2 {
		id, _ := v[j].(string)
		raw, _ := v[j+1].(string)
		if !t.makes(id) {
			continue
		}
		rec, err := decodeRecord(raw, morgue)
		if err != nil {
			return "", err
		}
		t.add(listEntry{id: id, sort: "0", rec: rec, sh: sh})
	}
	return next, nil
}

// makes reports whether id can make the page: the page is not full yet
// or id comes before its last row.
func (t *topIDs) makes(id string) bool {
	return len(t.rows) <= t.limit || t.before(id, t.rows[t.limit].id)
}

// add keeps row e; a row of the same id read before is replaced.
func (t *topIDs) add(e listEntry) {
	pos, found := slices.BinarySearchFunc(t.rows, e.id, func(r listEntry, id string) int {
		if r.id == id {
			return 0
		}
		if t.before(r.id, id) {
			return -1
		}
		return 1
	})
	if found {
		t.rows[pos] = e
		return
	}
	t.rows = slices.Insert(t.rows, pos, e)
	if len(t.rows) > t.limit+1 {
		t.rows = t.rows[:t.limit+1]
	}
}

// addEntry keeps a queued job or morgue entry of an export entry when it
// is within the bounds (scan.lua's rules) and makes the page.
func (t *topIDs) addEntry(it entryItem, b idBounds, freshOnly bool) error {
	if !b.within(it.id) || !t.makes(it.id) {
		return nil
	}
	rec, err := decodeRecord(it.data, it.kind == "m")
	if err != nil {
		return fmt.Errorf("export entry item %q: %w", it.id, err)
	}
	if freshOnly && rec.rc != persistence.FreshRetryCount {
		return nil
	}
	t.add(listEntry{id: it.id, sort: "0", rec: rec, sh: -1})
	return nil
}

// within reports whether id is within the bounds.
func (b idBounds) within(id string) bool {
	if b.lo != "" && (id < b.lo || (id == b.lo && !b.loIn)) {
		return false
	}
	return b.hi == "" || id < b.hi || (id == b.hi && b.hiIn)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// exactRow is the listing of one id (min = max): a lookup. While a
// reshard runs the id's old shard is read, then its export entry, then
// its new shard; the last read that holds it wins.
func (s *Store) exactRow(ctx context.Context, queue string, shards listSources, q listQuery, freshOnly bool) ([]listEntry, bool, error) {
	id := q.opts.Min
	var found *listEntry
	read := func(sh int) error {
		v, err := run(ctx, s.rdb, scriptGet, s.keys.shard(queue, sh).keys, id, q.view, "0", "0").Slice()
		if err != nil {
			return err
		}
		if raw, _ := v[0].(string); raw != "" {
			rec, err := decodeRecord(raw, q.view == "m")
			if err != nil {
				return err
			}
			found = &listEntry{id: id, sort: "0", rec: rec, sh: sh}
		}
		return nil
	}
	if shards.resharding() {
		old := shards.from.Shard(id)
		if err := read(old); err != nil {
			return nil, false, err
		}
		items, err := s.exportEntries(ctx, queue, persistence.ShardRange{Gen: shards.from.Gen, Base: old, Count: 1}, viewKind(q.view))
		if err != nil {
			return nil, false, err
		}
		for _, it := range items {
			if it.id != id {
				continue
			}
			rec, err := decodeRecord(it.data, q.view == "m")
			if err != nil {
				return nil, false, fmt.Errorf("export entry item %q: %w", id, err)
			}
			found = &listEntry{id: id, sort: "0", rec: rec, sh: -1}
		}
	}
	if err := read(shards.cur.Shard(id)); err != nil {
		return nil, false, err
	}
	if found == nil || (freshOnly && found.rec.rc != persistence.FreshRetryCount) {
		return nil, false, nil
	}
	return []listEntry{*found}, false, nil
}

// fillPayloads completes the rows whose listing wants more payloads than
// their records hold inline, reading their overflow from the shard the row
// was read from (a row that moved on meanwhile, while a reshard runs, is
// read from its shard of the current generation).
func (s *Store) fillPayloads(ctx context.Context, queue string, shards listSources, q listQuery, rows []listEntry) error {
	var idx []int
	for i, e := range rows {
		have := len(e.rec.shown())
		if e.sh >= 0 && e.rec.count() > have && q.opts.Payloads > have {
			idx = append(idx, i)
		}
	}
	for pass := 0; pass < 2 && len(idx) > 0; pass++ {
		calls := make([]call, len(idx))
		for j, i := range idx {
			calls[j] = call{s: scriptGet, keys: s.keys.shard(queue, rows[i].sh).keys,
				args: []any{rows[i].id, q.view, strconv.Itoa(q.opts.Payloads), "0"}}
		}
		cmds := runAll(ctx, s.rdb, calls)
		if err := firstErr(cmds); err != nil {
			return err
		}
		var again []int
		for j, c := range cmds {
			v, _ := c.Slice()
			i := idx[j]
			raw, _ := v[0].(string)
			if raw == "" {
				if cur := shards.cur.Shard(rows[i].id); shards.resharding() && rows[i].sh != cur {
					rows[i].sh = cur
					again = append(again, i)
				}
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
			rows[i].rec = rec
		}
		idx = again
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
		h, exp, err := decodeHeaders(hs)
		if err != nil {
			return nil, err
		}
		out = append(out, persistence.Payload{Data: []byte(data), Score: score, Headers: h, ExpiresAt: exp})
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
		Priority: e.rec.priority,
	}
}
