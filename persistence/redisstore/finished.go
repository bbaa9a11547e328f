package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

var _ persistence.FinishedStore = (*Store)(nil)

// TrimFinished implements persistence.FinishedStore (finished.lua).
func (s *Store) TrimFinished(ctx context.Context, ref persistence.ShardRef, before time.Time, limit int) (int, error) {
	sk, err := s.leasedKeys(ctx, ref)
	if err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = actionChunk
	}
	n, err := run(ctx, s.rdb, scriptFinished, sk.keys, "trim", formatFloat(persistence.UnixSeconds(before)), strconv.Itoa(limit)).Int()
	if err != nil {
		return 0, fmt.Errorf("redisstore: trim finished of %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	return n, nil
}

// finishedRow is one finished record of a page, with its sort key.
type finishedRow struct {
	at  string
	atF float64
	job persistence.FinishedJob
}

// ListFinished implements persistence.FinishedStore: a page of each shard
// (finished.lua), merged by (finished_at, id).
func (s *Store) ListFinished(ctx context.Context, queue string, opts persistence.ListOptions) (persistence.FinishedPage, error) {
	opts, lo, hi, cid, cat, err := finishedQuery(opts)
	if err != nil {
		return persistence.FinishedPage{}, err
	}
	byID := opts.Order == persistence.OrderID
	shards, err := s.listSourcesOf(ctx, queue)
	if err != nil {
		return persistence.FinishedPage{}, err
	}
	rev := "0"
	if opts.Rev {
		rev = "1"
	}
	replies, items, err := s.readSources(ctx, queue, shards, "f", func(sh int) call {
		return call{s: scriptFinished, keys: s.keys.shard(queue, sh).keys,
			args: []any{"page", rev, opts.Limit + 1, lo, hi, cid, cat, string(opts.Order)}}
	})
	if err != nil {
		return persistence.FinishedPage{}, fmt.Errorf("redisstore: list finished of %s: %w", queue, err)
	}
	var rows []finishedRow
	seen := map[string]int{}
	keep := func(id, at, raw string) error {
		j, err := decodeFinished(id, raw)
		if err != nil {
			return fmt.Errorf("redisstore: list finished of %s: %q: %w", queue, id, err)
		}
		f, _ := parseScore(at)
		r := finishedRow{at: at, atF: f, job: j}
		if i, ok := seen[id]; ok {
			rows[i] = r // read later: it wins
			return nil
		}
		seen[id] = len(rows)
		rows = append(rows, r)
		return nil
	}
	for _, c := range replies {
		if c.round == roundNew && len(items) > 0 {
			for _, it := range items {
				if err := keepFinishedEntry(it, opts, lo, hi, cid, cat, keep); err != nil {
					return persistence.FinishedPage{}, err
				}
			}
			items = nil
		}
		flat, _ := c.cmd.Slice()
		for i := 0; i+2 < len(flat); i += 3 {
			id, _ := flat[i].(string)
			at, _ := flat[i+1].(string)
			raw, _ := flat[i+2].(string)
			if err := keep(id, at, raw); err != nil {
				return persistence.FinishedPage{}, err
			}
		}
	}
	slices.SortFunc(rows, func(a, b finishedRow) int {
		c := 0
		if !byID {
			c = cmpFloat(a.atF, b.atF)
		}
		if c == 0 {
			c = strings.Compare(a.job.ID, b.job.ID)
		}
		if opts.Rev {
			return -c
		}
		return c
	})
	page := persistence.FinishedPage{Jobs: make([]persistence.FinishedJob, 0, min(len(rows), opts.Limit))}
	for i, r := range rows {
		if i == opts.Limit {
			last := rows[i-1]
			page.Next = cursor{order: opts.Order, rev: opts.Rev, score: last.at, id: last.job.ID}.encode()
			break
		}
		page.Jobs = append(page.Jobs, r.job)
	}
	return page, nil
}

// finishedQuery checks a finished listing's options and returns them with
// their defaults, and finished.lua's bounds and cursor (id, finished_at).
func finishedQuery(opts persistence.ListOptions) (persistence.ListOptions, string, string, string, string, error) {
	byID := opts.Order == persistence.OrderID
	if opts.Order != "" && opts.Order != persistence.OrderFinishedAt && !byID {
		return opts, "", "", "", "", invalid("order", "%q is not one of finished_at, id", opts.Order)
	}
	if opts.Order == "" {
		opts.Order = persistence.OrderFinishedAt
	}
	switch {
	case opts.Limit == 0:
		opts.Limit = persistence.DefaultListLimit
	case opts.Limit < 0 || opts.Limit > persistence.MaxListLimit:
		return opts, "", "", "", "", invalid("limit", "must be between 1 and %d", persistence.MaxListLimit)
	}
	lo, hi, err := finishedBounds(opts.Min, opts.Max)
	if byID {
		lo, hi, err = opts.Min, opts.Max, nil
		if len(lo) > persistence.MaxIDBytes || len(hi) > persistence.MaxIDBytes {
			return opts, "", "", "", "", invalid("min", "longer than %d bytes", persistence.MaxIDBytes)
		}
	}
	if err != nil {
		return opts, "", "", "", "", err
	}
	var cid, cat string
	if opts.Cursor != "" {
		c, err := decodeCursor(opts.Cursor)
		if err != nil || c.order != opts.Order || c.rev != opts.Rev {
			return opts, "", "", "", "", invalid("cursor", "not a cursor of this listing")
		}
		cid, cat = c.id, c.score
	}
	return opts, lo, hi, cid, cat, nil
}

// keepFinishedEntry hands a finished record of an export entry (item
// data fld(finished_at) record) to keep when finished.lua's page would
// hold it: within the bounds and after the cursor.
func keepFinishedEntry(it entryItem, opts persistence.ListOptions, lo, hi, cid, cat string, keep func(id, at, raw string) error) error {
	r := fieldReader{s: it.data}
	at, err := r.next()
	if err != nil {
		return fmt.Errorf("export entry item %q: %w", it.id, err)
	}
	raw := it.data[r.pos:]
	if opts.Order == persistence.OrderID {
		b := idBounds{lo: lo, loIn: true, hi: hi, hiIn: true}
		if !b.within(it.id) || (cid != "" && (opts.Rev && it.id >= cid || !opts.Rev && it.id <= cid)) {
			return nil
		}
		return keep(it.id, at, raw)
	}
	f, err := parseScore(at)
	if err != nil {
		return fmt.Errorf("export entry item %q: %w", it.id, err)
	}
	b := indexBounds{rev: opts.Rev}
	if lo != "-inf" {
		b.lo = lo
	}
	if hi != "+inf" {
		b.hi = hi
	}
	if cid != "" {
		b.cur = &cursor{score: cat, id: cid}
	}
	if !b.admits(f, it.id) {
		return nil
	}
	return keep(it.id, at, raw)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// finishedBounds checks a listing's finished_at bounds (unix seconds,
// empty, -inf or +inf) and returns them as finished.lua takes them.
func finishedBounds(minS, maxS string) (string, string, error) {
	out := [2]string{"-inf", "+inf"}
	for i, b := range []string{minS, maxS} {
		switch strings.ToLower(b) {
		case "", "-inf", "+inf", "inf":
			continue
		}
		f, err := strconv.ParseFloat(b, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", "", invalid([2]string{"min", "max"}[i], "%q is not a finite number", b)
		}
		out[i] = formatFloat(f)
	}
	return out[0], out[1], nil
}

// decodeFinished decodes a finished record (advance.lua): "\x01",
// fld(finished_at), fld(attempts), fld(last error), fld("1" or "0": a
// result was set), fld(result), fld(history): fld(at) fld(error) per failed
// attempt. Later fields a newer release appends are ignored.
func decodeFinished(id, raw string) (persistence.FinishedJob, error) {
	j := persistence.FinishedJob{ID: id}
	if raw == "" || raw[0] != 1 {
		return j, errors.New("not a finished record")
	}
	r := &fieldReader{s: raw, pos: 1}
	var f [6]string
	for i := range f {
		v, err := r.next()
		if err != nil {
			return j, err
		}
		f[i] = v
	}
	at, err := parseScore(f[0])
	if err != nil {
		return j, err
	}
	j.FinishedAt = persistence.FromUnixSeconds(at)
	if j.Attempts, err = strconv.Atoi(f[1]); err != nil {
		return j, errCorrupt
	}
	j.Error = f[2]
	if f[3] == "1" {
		j.Result = []byte(f[4])
	}
	h := &fieldReader{s: f[5]}
	for !h.done() {
		a, err := h.next()
		if err != nil {
			return j, err
		}
		e, err := h.next()
		if err != nil {
			return j, err
		}
		t, err := parseScore(a)
		if err != nil {
			return j, err
		}
		j.Errors = append(j.Errors, persistence.AttemptError{At: persistence.FromUnixSeconds(t), Error: e})
	}
	return j, nil
}
