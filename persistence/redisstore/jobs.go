package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/orderlyhq/orderly/persistence"
)

// GetJob implements persistence.Inspector: the record, its overflow and the
// in-flight record are read by one script, so they are consistent.
// While a reshard moves the id, the lookup reads its old shard, its way
// and its new shard (getMoving). A lookup that finds nothing reads the
// queue's shape again and, if a reshard began or ended meanwhile, looks
// again.
func (s *Store) GetJob(ctx context.Context, queue, id string) (persistence.JobInfo, error) {
	info, err := s.getJob(ctx, queue, id)
	if errors.Is(err, persistence.ErrNotFound) && s.shapeChanged(ctx, queue) {
		info, err = s.getJob(ctx, queue, id)
	}
	return info, err
}

func (s *Store) getJob(ctx context.Context, queue, id string) (persistence.JobInfo, error) {
	old, sh, err := s.lookupShards(ctx, queue, id)
	if err != nil {
		return persistence.JobInfo{}, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return persistence.JobInfo{}, err
	}
	if old >= 0 {
		if mode, err := s.mode(ctx); err != nil || mode == modeUpgrading {
			return persistence.JobInfo{}, errors.Join(err, fmt.Errorf("%w: %s/%d", persistence.ErrResharding, queue, old))
		}
		v, home, err := s.getMoving(ctx, queue, id, old, sh)
		if err != nil {
			return persistence.JobInfo{}, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
		}
		return jobInfoOf(queue, id, home, v)
	}
	// Move the id's layout 1 entry first, so that the lookup shows it merged
	// as the actions will find it; a shard a node of the previous release
	// may serve is read in both layouts instead.
	err = s.catchUpIDs(ctx, persistence.ShardRef{Queue: queue, Shard: sh}, v1Queued, []string{id})
	if err != nil && !errors.Is(err, persistence.ErrUpgradeInProgress) {
		return persistence.JobInfo{}, err
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return persistence.JobInfo{}, err
	}
	sk := s.keys.shard(queue, sh)
	keys, v1 := sk.keys, "0"
	if mode == modeUpgrading {
		keys, v1 = sk.with(sk.v1Payloads(id)), "1"
	}
	v, err := run(ctx, s.rdb, scriptGet, keys, id, "q", strconv.Itoa(persistence.MaxLookupPayloads), v1, "1").Slice()
	if err != nil {
		return persistence.JobInfo{}, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
	}
	return jobInfoOf(queue, id, sh, v)
}

// jobInfoOf decodes a get.lua reply of a lookup of id in shard sh.
func jobInfoOf(queue, id string, sh int, v []any) (persistence.JobInfo, error) {
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
	if err := lookupTraces(&info, v, id); err != nil {
		return info, fmt.Errorf("redisstore: get job %s/%s: %w", queue, id, err)
	}
	// A state tombstone is a trace of the id too: its version is what the
	// next compare-and-set must name (docs/contract.md §11). So are a morgue
	// entry (docs/contract.md §3.9) and a finished record (§3.14).
	if info.Queued == nil && info.InFlight == nil && info.State == nil && info.Timer.IsZero() && info.Morgue == nil &&
		info.Finished == nil {
		return info, fmt.Errorf("%w: job %q in queue %s", persistence.ErrNotFound, id, queue)
	}
	return info, nil
}

// lookupTraces reads what get.lua returns besides the queued and
// in-flight entries: the state, the timer, the morgue entry and the
// finished record.
func lookupTraces(info *persistence.JobInfo, v []any, id string) error {
	if len(v) > 4 {
		if raw, _ := v[4].(string); raw != "" {
			st, err := decodeState(raw)
			if err != nil {
				return fmt.Errorf("state: %w", err)
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
	if len(v) > 7 {
		m, err := morgueOfLookup(v[6], v[7], id)
		if err != nil {
			return fmt.Errorf("morgue: %w", err)
		}
		info.Morgue = m
	}
	if len(v) > 8 {
		if raw, _ := v[8].(string); raw != "" {
			f, err := decodeFinished(id, raw)
			if err != nil {
				return fmt.Errorf("finished record: %w", err)
			}
			info.Finished = &f
		}
	}
	return nil
}

// morgueOfLookup decodes the morgue record and overflow get.lua returns
// for a lookup; nil when the id has no morgue entry.
func morgueOfLookup(rawV, flatV any, id string) (*persistence.MorgueEntry, error) {
	raw, _ := rawV.(string)
	if raw == "" {
		return nil, nil
	}
	rec, err := decodeRecord(raw, true)
	if err != nil {
		return nil, err
	}
	flat, _ := flatV.([]any)
	if rec.more, err = payloadsOf(flat); err != nil {
		return nil, err
	}
	e := morgueEntryOf(listEntry{id: id, rec: rec}, persistence.MaxLookupPayloads)
	return &e, nil
}

// DeleteJob implements persistence.Admin. An id with many payloads is
// deleted over several bounded calls.
func (s *Store) DeleteJob(ctx context.Context, queue, id string) (bool, error) {
	sh, err := s.homeOf(ctx, queue, id)
	if err != nil {
		return false, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return false, err
	}
	if err := s.catchUpIDs(ctx, persistence.ShardRef{Queue: queue, Shard: sh}, v1Queued, []string{id}); err != nil {
		return false, fmt.Errorf("redisstore: delete job %s/%s: %w", queue, id, err)
	}
	sk := s.keys.shard(queue, sh)
	for {
		res, err := run(ctx, s.rdb, scriptAction, sk.keys, s.now(), "delete", id,
			s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), strconv.Itoa(movePayloads), "0").Slice()
		if err != nil {
			return false, fmt.Errorf("redisstore: delete job %s/%s: %w", queue, id, s.reshardErr(queue, err))
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

// PerformJobNow implements persistence.Admin.
func (s *Store) PerformJobNow(ctx context.Context, queue, id string) (bool, error) {
	return s.jobAction(ctx, queue, id, "perform now", "perform_now_id")
}

// KillJob implements persistence.Admin. An id with many payloads is moved
// over several bounded calls, all stamped with the first call's time.
func (s *Store) KillJob(ctx context.Context, queue, id string) (bool, error) {
	return s.jobAction(ctx, queue, id, "kill", "kill_id")
}

// jobAction runs an action of one id (action.lua) until it is done and
// reports whether the id had a queued entry.
func (s *Store) jobAction(ctx context.Context, queue, id, what, action string) (bool, error) {
	sh, err := s.homeOf(ctx, queue, id)
	if err != nil {
		return false, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return false, err
	}
	if err := s.catchUpIDs(ctx, persistence.ShardRef{Queue: queue, Shard: sh}, v1Queued, []string{id}); err != nil {
		return false, fmt.Errorf("redisstore: %s %s/%s: %w", what, queue, id, err)
	}
	sk := s.keys.shard(queue, sh)
	now, found := s.now(), false
	for {
		res, err := run(ctx, s.rdb, scriptAction, sk.keys, now, action, id,
			s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), strconv.Itoa(movePayloads), "0").Slice()
		if err != nil {
			return false, fmt.Errorf("redisstore: %s %s/%s: %w", what, queue, id, s.reshardErr(queue, err))
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

// PerformAllNow implements persistence.Admin.
func (s *Store) PerformAllNow(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "perform all now", scriptAction, func(sh int, now string, held int64) []any {
		return []any{now, "perform_now", strconv.Itoa(actionChunk), s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh),
			strconv.Itoa(movePayloads), strconv.FormatInt(held, 10)}
	})
}

// KillFailed implements persistence.Admin.
func (s *Store) KillFailed(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "kill failed", scriptAction, func(sh int, now string, _ int64) []any {
		return []any{now, "kill_failed", strconv.Itoa(actionChunk), s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh),
			strconv.Itoa(movePayloads), "0"}
	})
}

// DeleteFailed implements persistence.Admin.
func (s *Store) DeleteFailed(ctx context.Context, queue string) (int, error) {
	return s.eachShard(ctx, queue, "delete failed", scriptAction, func(sh int, now string, _ int64) []any {
		return []any{now, "delete_failed", strconv.Itoa(actionChunk), s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh),
			strconv.Itoa(movePayloads), "0"}
	})
}

// eachShard runs a bounded bulk script on every shard of the queue, one
// pipeline per round, until every shard is done, after moving the layout 1
// data it acts on into layout 2 (catchup.go). The first call of a shard
// reads the time; its later calls are given that time, so that the action
// sees one "now". Each call is atomic; the whole action is not (as in
// Lowkiq), but it is synchronous and reports how many ids it changed.
//
// action.lua answers {done, seen, partial, held, now}, morgue.lua {done,
// partial, seen}: a shard is done when seen < actionChunk and partial is 0.
func (s *Store) eachShard(ctx context.Context, queue, what string, sc *script, argsOf func(sh int, now string, held int64) []any) (int, error) {
	nums, err := s.shardNums(ctx, queue)
	if err != nil {
		return 0, err
	}
	kinds := v1Queued
	if sc == scriptMorgue {
		kinds = v1Dead
	}
	if err := s.catchUp(ctx, queue, kinds); err != nil {
		return 0, fmt.Errorf("redisstore: %s in %s: %w", what, queue, err)
	}
	type state struct {
		sh   int
		now  string
		held int64
	}
	pending := make([]state, len(nums))
	for i := range pending {
		pending[i] = state{sh: nums[i], now: s.now()}
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
			return total, fmt.Errorf("redisstore: %s in %s: %w", what, queue, s.reshardErr(queue, err))
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

// CancelJob implements persistence.Admin (action.lua's cancel): the queued
// payloads are killed or deleted over bounded calls, all stamped with the
// first call's time; the in-flight record is marked and the notice sent by
// the call that finishes them.
func (s *Store) CancelJob(ctx context.Context, queue, id string, mode persistence.CancelMode) (persistence.CancelResult, error) {
	var out persistence.CancelResult
	m := "k"
	switch mode {
	case persistence.CancelKill, "":
	case persistence.CancelDelete:
		m = "d"
	default:
		return out, &persistence.FieldError{Field: "mode", Index: -1, Reason: fmt.Sprintf("unknown cancel mode %q", mode)}
	}
	sh, err := s.homeOf(ctx, queue, id)
	if err != nil {
		return out, err
	}
	if err := persistence.ValidateID(id, -1); err != nil {
		return out, err
	}
	if err := s.catchUpIDs(ctx, persistence.ShardRef{Queue: queue, Shard: sh}, v1Queued, []string{id}); err != nil {
		return out, fmt.Errorf("redisstore: cancel %s/%s: %w", queue, id, err)
	}
	sk := s.keys.shard(queue, sh)
	now := s.now()
	for {
		res, err := run(ctx, s.rdb, scriptAction, sk.keys, now, "cancel", id,
			s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh), strconv.Itoa(movePayloads), m).Slice()
		if err != nil {
			return out, fmt.Errorf("redisstore: cancel %s/%s: %w", queue, id, s.reshardErr(queue, err))
		}
		if len(res) < 7 {
			return out, fmt.Errorf("redisstore: cancel %s/%s: unexpected reply", queue, id)
		}
		seen, _ := res[1].(int64)
		partial, _ := res[2].(int64)
		now, _ = res[4].(string)
		moved, _ := res[5].(int64)
		marked, _ := res[6].(int64)
		out.Queued = out.Queued || seen > 0
		out.Payloads += int(moved)
		out.InFlight = out.InFlight || marked > 0
		if partial == 0 {
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("redisstore: cancel %s/%s: %w", queue, id, err)
		}
	}
}
