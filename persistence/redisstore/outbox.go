package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// The per-shard outbox (docs/storage.md section 10): a stream in the
// shard's slot. advance.lua appends the emits of acknowledged ids (field
// "e") and, with state.lua, the changes for the change feed (field "f",
// feed.go); RelayOutbox enqueues them into their targets and deletes them by
// entry id, so overlapping relays (an old owner and a new one) remove
// each entry once and enqueue it at least once. Each target shard keeps a
// relay mark per source shard (the last outbox entry it took from it), so a
// relay that runs again after a failure (its WAIT fell short, its trim
// failed) enqueues no entry twice (enqueue.lua).

// DefaultRelayChunk is how many outbox entries one RelayOutbox call reads
// when the caller gives no limit.
const DefaultRelayChunk = 500

// encodeEmit is an emit's outbox entry: fld(queue) fld(id) fld(payload)
// fld(score) fld(perform_at), "" for a default score or time, then
// fld(headers) (encodeHeaders) only when the payload has headers.
func encodeEmit(e persistence.Emit) string {
	score, at := "", ""
	if e.Job.Score != nil {
		score = formatFloat(*e.Job.Score)
	}
	if !e.Job.PerformAt.IsZero() {
		at = formatFloat(persistence.UnixSeconds(e.Job.PerformAt))
	}
	b := make([]byte, 0, len(e.Queue)+len(e.Job.ID)+len(e.Job.Payload)+len(score)+len(at)+16)
	b = appendField(b, e.Queue)
	b = appendField(b, e.Job.ID)
	b = appendField(b, string(e.Job.Payload))
	b = appendField(b, score)
	b = appendField(b, at)
	if len(e.Job.Headers) > 0 || !e.Job.ExpiresAt.IsZero() {
		b = appendField(b, encodeHeaders(e.Job.Headers, e.Job.ExpiresAt))
	}
	return string(b)
}

// decodeEmit reads what encodeEmit wrote (the queue and the job).
func decodeEmit(s string) (string, persistence.NewJob, error) {
	r := &fieldReader{s: s}
	var f [5]string
	for i := range f {
		v, err := r.next()
		if err != nil {
			return "", persistence.NewJob{}, err
		}
		f[i] = v
	}
	var headers map[string]string
	var exp time.Time
	if !r.done() {
		h, err := r.next()
		if err != nil {
			return "", persistence.NewJob{}, err
		}
		if headers, exp, err = decodeHeaders(h); err != nil {
			return "", persistence.NewJob{}, err
		}
	}
	if !r.done() {
		return "", persistence.NewJob{}, fmt.Errorf("%w: %d trailing bytes in an emit", errCorrupt, len(s)-r.pos)
	}
	j := persistence.NewJob{ID: f[1], Payload: []byte(f[2]), Headers: headers, ExpiresAt: exp}
	if f[3] != "" {
		v, err := parseScore(f[3])
		if err != nil {
			return "", j, errCorrupt
		}
		j.Score = &v
	}
	if f[4] != "" {
		v, err := parseScore(f[4])
		if err != nil {
			return "", j, errCorrupt
		}
		j.PerformAt = persistence.FromUnixSeconds(v)
	}
	return f[0], j, nil
}

// RelayOutbox implements persistence.OutboxStore.
func (s *Store) RelayOutbox(ctx context.Context, ref persistence.ShardRef, limit int) (relayed, dropped int, more bool, err error) {
	sk, err := s.leasedKeys(ctx, ref)
	if err != nil {
		return 0, 0, false, err
	}
	if limit <= 0 {
		limit = DefaultRelayChunk
	}
	key := sk.keys[kOutbox]
	msgs, err := s.rdb.XRangeN(ctx, key, "-", "+", int64(limit)).Result()
	if err != nil {
		return 0, 0, false, fmt.Errorf("redisstore: read the outbox of %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	if len(msgs) == 0 {
		return 0, 0, false, nil
	}
	if s.afterOutboxRead != nil {
		s.afterOutboxRead()
	}
	ids := make([]string, 0, len(msgs))
	byQueue := map[string]*relayBatch{}
	var order []string
	var changes []feedChange
	for _, m := range msgs {
		ids = append(ids, m.ID)
		if raw, ok := m.Values["f"].(string); ok {
			c, err := decodeFeedChange(raw)
			c.entry = m.ID
			if err != nil {
				s.cfg.Logger.Error("corrupt outbox entry dropped", "queue", ref.Queue, "shard", ref.Shard, "entry", m.ID, "err", err)
				dropped++
				continue
			}
			changes = append(changes, c)
			continue
		}
		raw, ok := m.Values["e"].(string)
		if !ok {
			s.cfg.Logger.Error("outbox entry of an unknown kind dropped", "queue", ref.Queue, "shard", ref.Shard, "entry", m.ID)
			dropped++
			continue
		}
		q, j, err := decodeEmit(raw)
		if err != nil {
			s.cfg.Logger.Error("corrupt outbox entry dropped", "queue", ref.Queue, "shard", ref.Shard, "entry", m.ID, "err", err)
			dropped++
			continue
		}
		b := byQueue[q]
		if b == nil {
			b = &relayBatch{}
			byQueue[q] = b
			order = append(order, q)
		}
		b.jobs, b.entries = append(b.jobs, j), append(b.entries, m.ID)
	}
	source := ref.Queue + "/" + strconv.Itoa(ref.Shard)
	for _, q := range order {
		jobs := byQueue[q].jobs
		// The target skips the entries an earlier relay wrote (its trim
		// or its WAIT failed after the enqueue), so that a relay that
		// runs again hands no emit over twice (issue #30).
		_, err := s.enqueue(ctx, q, jobs, relayFrom{source: source, entries: byQueue[q].entries})
		var fe *persistence.FieldError
		switch {
		case err == nil:
			relayed += len(jobs)
		case errors.Is(err, persistence.ErrUnknownQueue), errors.As(err, &fe):
			// Checked when committed, so only a queue never registered (or
			// a limit lowered since) gets here: retrying cannot help.
			s.cfg.Logger.Error("emits dropped: their target queue does not accept them", "queue", ref.Queue, "shard", ref.Shard,
				"target", q, "jobs", len(jobs), "err", err)
			dropped += len(jobs)
		default:
			// Nothing is removed: the next relay enqueues what this one
			// did not (the targets' relay marks skip the rest).
			return 0, 0, true, fmt.Errorf("redisstore: relay the outbox of %s/%d to %s: %w", ref.Queue, ref.Shard, q, err)
		}
	}
	if _, err := s.publishFeed(ctx, ref, changes); err != nil {
		return 0, 0, true, err
	}
	relayed += len(changes)
	if err := s.deleteRelayed(ctx, key, ids); err != nil {
		return relayed, dropped, true, fmt.Errorf("redisstore: trim the outbox of %s/%d: %w", ref.Queue, ref.Shard, err)
	}
	return relayed, dropped, len(msgs) == limit, nil
}

// relayBatch is what one relay enqueues into one target queue: the jobs and
// the outbox entry each comes from.
type relayBatch struct {
	jobs    []persistence.NewJob
	entries []string
}

// deleteRelayed removes relayed entries from an outbox. In the replicated
// durability mode the XDEL is followed by WAIT on the same connection, like
// every other write (docs/contract.md §4).
func (s *Store) deleteRelayed(ctx context.Context, key string, ids []string) error {
	if s.wait == nil {
		return s.rdb.XDel(ctx, key, ids...).Err()
	}
	var c redis.Cmdable = s.rdb
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return fmt.Errorf("find the master of %s: %w", key, err)
		}
		c = m
	}
	pipe := c.Pipeline()
	del := pipe.XDel(ctx, key, ids...)
	wait := pipe.Do(ctx, "WAIT", s.wait.replicas, max(s.wait.timeout.Milliseconds(), 1))
	_, _ = pipe.Exec(ctx) // each command carries its own error
	if err := del.Err(); err != nil {
		return err
	}
	n, err := wait.Int64()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %v", persistence.ErrNotReplicated, err)
	}
	if int(n) < s.wait.replicas {
		return replicatedErr(int(n), s.wait.replicas)
	}
	return nil
}
