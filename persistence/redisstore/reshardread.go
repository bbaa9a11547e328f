package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Listings and lookups while a reshard runs (docs/storage.md section 11). An id's data
// only ever moves one way: from its shard of the drained generation, into
// that shard's export entry (meta "xj"), into its shard of the current
// generation. A listing that reads every old shard, then the old shards'
// entries, then the new shards, each round after the one before, thus
// meets every id that exists throughout at least once; where it meets an
// id more than once, the last read wins.

// listSources names the shards a listing reads: the queue's current
// generation and, while a reshard runs, the drained one (from).
type listSources struct {
	cur  persistence.ShardRange
	from persistence.ShardRange // Count 0 when no reshard runs
}

// resharding reports whether a reshard runs: the listing reads two
// generations and the drained one's entries.
func (ls listSources) resharding() bool { return ls.from.Count > 0 }

// shards returns the shard numbers of r.
func shardsIn(r persistence.ShardRange) []int {
	out := make([]int, r.Count)
	for i := range out {
		out[i] = r.Base + i
	}
	return out
}

// listSourcesOf returns the shards a listing of queue reads. The shape is
// read again (one HGET): a listing of a process whose cached shape does
// not know of a reshard yet would miss the ids moved already.
func (s *Store) listSourcesOf(ctx context.Context, queue string) (listSources, error) {
	sh, err := s.refreshShape(ctx, queue)
	if err != nil {
		return listSources{}, err
	}
	ls := listSources{cur: sh.Current}
	if sh.Resharding() {
		ls.from = sh.From
	}
	return ls, nil
}

// sourceRow is a reply of one shard's call, or a row of an export entry,
// with the round it was read in: a later round's row of an id wins.
type sourceRound int

const (
	roundOld   sourceRound = iota // a shard of the drained generation
	roundEntry                    // an export entry of such a shard
	roundNew                      // a shard of the current generation
)

// shardReply is the reply of one shard's call of a listing.
type shardReply struct {
	sh    int
	round sourceRound
	cmd   *redis.Cmd
}

// readSources runs mk's call on every shard of the listing, and reads the
// drained shards' export entries (item kinds, see entryItems) in between
// when a reshard runs: old shards, entries, new shards, one round after
// the other.
func (s *Store) readSources(ctx context.Context, queue string, ls listSources, kind string, mk func(sh int) call) ([]shardReply, []entryItem, error) {
	var replies []shardReply
	round := func(shards []int, r sourceRound) error {
		calls := make([]call, len(shards))
		for i, sh := range shards {
			calls[i] = mk(sh)
		}
		cmds := runAll(ctx, s.rdb, calls)
		if err := firstErr(cmds); err != nil {
			return err
		}
		for i, c := range cmds {
			replies = append(replies, shardReply{sh: shards[i], round: r, cmd: c})
		}
		return nil
	}
	if !ls.resharding() {
		return replies, nil, round(shardsIn(ls.cur), roundNew)
	}
	if err := round(shardsIn(ls.from), roundOld); err != nil {
		return nil, nil, err
	}
	items, err := s.exportEntries(ctx, queue, ls.from, kind)
	if err != nil {
		return nil, nil, err
	}
	return replies, items, round(shardsIn(ls.cur), roundNew)
}

// entryItem is one item of a drained shard's export entry (drain.lua):
// its kind ("j" queued job, "m" morgue entry, "f" finished record, ...),
// the id and the data as the entry holds it.
type entryItem struct {
	kind, id, data string
}

// exportEntries returns the items of the given kind in the export entries
// the shards of r hold now (an entry exported and not yet acknowledged).
func (s *Store) exportEntries(ctx context.Context, queue string, r persistence.ShardRange, kind string) ([]entryItem, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, r.Count)
	for i := range r.Count {
		cmds[i] = pipe.HGet(ctx, s.keys.shard(queue, r.Base+i).keys[kMeta], "xj")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the export entries of %s: %w", queue, err)
	}
	var out []entryItem
	for i, c := range cmds {
		items, err := entryItems(c.Val(), kind)
		if err != nil {
			return nil, fmt.Errorf("export entry of %s/%d: %w", queue, r.Base+i, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

// entryItems parses an export entry (drain.lua: fld(kind) fld(id)
// fld(data) per item) and returns its items of the given kind.
func entryItems(entry, kind string) ([]entryItem, error) {
	var out []entryItem
	r := fieldReader{s: entry}
	for !r.done() {
		var it [3]string
		for i := range it {
			v, err := r.next()
			if err != nil {
				return nil, err
			}
			it[i] = v
		}
		if it[0] == kind {
			out = append(out, entryItem{kind: it[0], id: it[1], data: it[2]})
		}
	}
	return out, nil
}

// indexBounds is what an index page of list.lua keeps: the sort key
// within [lo, hi] ("" = none) and strictly after the cursor.
type indexBounds struct {
	lo, hi string
	cur    *cursor
	rev    bool
}

// admits reports whether the row (sort key f, id) belongs to the page, as
// list.lua decides.
func (b indexBounds) admits(f float64, id string) bool {
	if b.lo != "" {
		if lo, _ := strconv.ParseFloat(b.lo, 64); f < lo {
			return false
		}
	}
	if b.hi != "" {
		if hi, _ := strconv.ParseFloat(b.hi, 64); f > hi {
			return false
		}
	}
	if b.cur == nil {
		return true
	}
	cs, _ := strconv.ParseFloat(b.cur.score, 64)
	c := cmp.Compare(f, cs)
	if c == 0 {
		c = cmp.Compare(id, b.cur.id)
	}
	if b.rev {
		return c < 0
	}
	return c > 0
}

// entryIndexRows returns the rows of an index view (list.lua's) that the
// export entries' items hold: queued jobs by due time or (retries) by
// retry count, morgue entries by update time.
func entryIndexRows(items []entryItem, view string, b indexBounds) ([]listEntry, error) {
	var out []listEntry
	for _, it := range items {
		rec, err := decodeRecord(it.data, it.kind == "m")
		if err != nil {
			return nil, fmt.Errorf("export entry item %q: %w", it.id, err)
		}
		f := rec.at
		if view == "retries" {
			if rec.rc < 0 {
				continue
			}
			f = float64(rec.rc)
		}
		if !b.admits(f, it.id) {
			continue
		}
		out = append(out, listEntry{id: it.id, sort: formatFloat(f), sortF: f, rec: rec, sh: -1})
	}
	return out, nil
}

// lastReadWins keeps, of the rows of one id, the one read last (rows are
// given in the order they were read).
func lastReadWins(rows []listEntry) []listEntry {
	at := make(map[string]int, len(rows))
	out := rows[:0]
	for _, e := range rows {
		if i, ok := at[e.id]; ok {
			out[i] = e
			continue
		}
		at[e.id] = len(out)
		out = append(out, e)
	}
	return out
}

// viewKind is the export entry item kind a listing view lists.
func viewKind(view string) string {
	if view == "m" {
		return "m"
	}
	return "j"
}

// lookupShards returns the shards a lookup of id reads, in order: its
// shard or, while a reshard moves it (its old shard is not drained yet),
// its old shard, then its new one (the old shard's export entry is read
// in between: readMoving).
func (s *Store) lookupShards(ctx context.Context, queue, id string) (old, cur int, err error) {
	cur, err = s.homeOf(ctx, queue, id)
	if err == nil || !errors.Is(err, persistence.ErrResharding) {
		return -1, cur, err
	}
	sh, err := s.shapeOf(ctx, queue)
	if err != nil {
		return 0, 0, err
	}
	return sh.From.Shard(id), sh.Current.Shard(id), nil
}

// entryOf returns the items of id in the export entry of shard sh, by
// kind.
func (s *Store) entryOf(ctx context.Context, queue string, sh int, id string) (map[string]string, error) {
	v, err := s.rdb.HGet(ctx, s.keys.shard(queue, sh).keys[kMeta], "xj").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the export entry of %s/%d: %w", queue, sh, err)
	}
	out := map[string]string{}
	r := fieldReader{s: v}
	for !r.done() {
		var it [3]string
		for i := range it {
			if it[i], err = r.next(); err != nil {
				return nil, fmt.Errorf("export entry of %s/%d: %w", queue, sh, err)
			}
		}
		if it[1] == id {
			out[it[0]] = it[2]
		}
	}
	return out, nil
}

// getMoving reads id as get.lua would while a reshard moves it: get.lua
// on its old shard, then its items in the old shard's export entry, then
// get.lua on its new shard. Each part of the reply (the queued record
// with its overflow, the state, the timer, the morgue entry with its
// overflow, the finished record) comes from the last read that holds it.
// It returns the merged reply and the shard that holds the queued record
// (the new one when none does).
func (s *Store) getMoving(ctx context.Context, queue, id string, old, cur int) ([]any, int, error) {
	get := func(sh int) ([]any, error) {
		return run(ctx, s.rdb, scriptGet, s.keys.shard(queue, sh).keys, id, "q",
			strconv.Itoa(persistence.MaxLookupPayloads), "0", "1").Slice()
	}
	v, err := get(old)
	if err != nil {
		return nil, 0, err
	}
	home := old
	items, err := s.entryOf(ctx, queue, old, id)
	if err != nil {
		return nil, 0, err
	}
	// The entry's items as get.lua's reply: an exported record holds
	// every payload it moves, a finished item is fld(finished_at) record.
	fin := items["f"]
	if fin != "" {
		r := fieldReader{s: fin}
		if _, err := r.next(); err != nil {
			return nil, 0, fmt.Errorf("export entry item %q: %w", id, err)
		}
		fin = fin[r.pos:]
	}
	entry := []any{items["j"], []any{}, "", []any{}, items["s"], items["t"], items["m"], []any{}, fin}
	if items["j"] != "" {
		home = cur
	}
	overlay(v, entry)
	nv, err := get(cur)
	if err != nil {
		return nil, 0, err
	}
	if s, _ := nv[0].(string); s != "" {
		home = cur
	}
	overlay(v, nv)
	return v, home, nil
}

// overlay puts into v (a get.lua reply) each part of w that holds
// something: the queued record with its overflow (0, 1), the in-flight
// record (2), the state (4), the timer (5), the morgue record with its
// overflow (6, 7), the finished record (8).
func overlay(v, w []any) {
	has := func(i int) bool {
		s, _ := w[i].(string)
		return s != ""
	}
	for _, part := range [][]int{{0, 1}, {2}, {4}, {5}, {6, 7}, {8}} {
		if part[0] < len(w) && part[len(part)-1] < len(v) && has(part[0]) {
			for _, i := range part {
				v[i] = w[i]
			}
		}
	}
}

// shapeChanged reports whether the queue's shape in the registry differs
// from the cached one (it is cached again).
func (s *Store) shapeChanged(ctx context.Context, queue string) bool {
	s.mu.RLock()
	was, ok := s.shapes[queue]
	s.mu.RUnlock()
	now, err := s.refreshShape(ctx, queue)
	return err == nil && (!ok || now != was)
}
