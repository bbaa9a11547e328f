package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/orderlyhq/orderly/persistence"
)

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
	if req.MaxPayloads < 0 || req.CallTimeout < 0 || req.CallSize < 0 || req.MaxCalls < 0 {
		return out, &persistence.FieldError{Field: "max_payloads_per_call", Index: -1, Reason: "MaxPayloads, CallTimeout, CallSize and MaxCalls must not be negative"}
	}
	sk, err := s.shardKeys(ctx, lease.ShardRef)
	if err != nil {
		return out, err
	}
	maxp := req.MaxPayloads
	if maxp == 0 {
		maxp = persistence.DefaultMaxPayloadsPerCall
	}
	var timeout any = ""
	if req.CallTimeout > 0 {
		timeout = max(req.CallTimeout.Milliseconds(), 1)
	}
	var calls any = req.CallSize
	if req.MaxCalls > 0 {
		calls = strconv.Itoa(req.CallSize) + ":" + strconv.Itoa(req.MaxCalls)
	}
	v1 := s.checkV1(ctx, lease.ShardRef)
	args := make([]any, 0, 17+3*len(req.Failures)+len(req.Skipped)+len(req.Interrupted))
	// Numbers go as they are: go-redis writes them in decimal, without
	// the string and its boxing strconv would cost.
	args = append(args, s.now(), lease.Token, req.Settle, req.NextSeq, req.Fetch, req.MaxRetryCount, maxp,
		timeout, calls, v1, len(req.Failures))
	for _, f := range req.Failures {
		at := ""
		if !f.RetryAt.IsZero() {
			at = formatFloat(persistence.UnixSeconds(f.RetryAt))
		}
		args = append(args, f.ID, f.Error, at)
	}
	args = append(args, len(req.Skipped))
	for _, id := range req.Skipped {
		args = append(args, id)
	}
	args = append(args, len(req.Interrupted))
	for _, id := range req.Interrupted {
		args = append(args, id)
	}
	if req.Stateful {
		args = append(args, "1", strconv.Itoa(len(req.StateWrites)))
		for _, w := range req.StateWrites {
			if err := persistence.CheckStateSize(w.Data, req.MaxStateBytes); err != nil {
				return out, err
			}
			if w.Delete {
				args = append(args, w.ID, "d", "")
			} else {
				args = append(args, w.ID, "s", w.Data)
			}
		}
		args = append(args, strconv.Itoa(len(req.TimerWrites)))
		for _, w := range req.TimerWrites {
			if w.Clear {
				args = append(args, w.ID, "c", "")
				continue
			}
			if err := persistence.ValidTime(w.At, "timer"); err != nil {
				return out, err
			}
			args = append(args, w.ID, "s", formatFloat(persistence.UnixSeconds(w.At)))
		}
	} else {
		if len(req.StateWrites) > 0 || len(req.TimerWrites) > 0 {
			return out, &persistence.FieldError{Field: "state", Index: -1, Reason: "state writes on a queue that is not stateful"}
		}
		args = append(args, "0", "0", "0")
	}
	// Emits are checked against the default payload limit, as the node
	// checks them before the call; the relay enqueues them under the
	// store's own limit (and drops, logged, what it refuses).
	args, err = appendEmits(args, req.Emits, max(s.cfg.MaxPayloadBytes, persistence.DefaultMaxPayloadBytes))
	if err != nil {
		return out, err
	}
	if req.CheckOutbox {
		args = append(args, "1")
	} else {
		args = append(args, "0")
	}
	if req.FeedMaxLen < 0 {
		return out, &persistence.FieldError{Field: "feed_max_len", Index: -1, Reason: "must not be negative"}
	}
	args = append(args, strconv.Itoa(req.FeedMaxLen))
	cmds, werr := s.runWrite(ctx, []call{{s: scriptAdvance, keys: sk.keys, boxed: sk.boxed, args: args}})
	res, err := cmds[0].Slice()
	if err != nil {
		if isLeaseLost(err) {
			return out, fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
		}
		return out, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if werr != nil {
		// The settle and the fetch are on the master but may not survive
		// a failover: a store failure, so the caller retries (the fetched
		// batch stays in flight and is handed out again).
		return out, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, werr)
	}
	if len(res) != 11 {
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
		if req.Stateful {
			states, _ := res[9].([]any)
			for i := range jobs {
				var st persistence.State
				if i < len(states) {
					if st, err = decodeState(states[i]); err != nil {
						return out, fmt.Errorf("redisstore: advance %s/%d: state of %q: %w", lease.Queue, lease.Shard, jobs[i].ID, err)
					}
				}
				if jobs[i].State != nil && st.Version != jobs[i].State.Version {
					// A retried Advance whose state changed since: the
					// settle will see the conflict; hand out what the
					// in-flight record holds.
					st.Version = jobs[i].State.Version
				}
				jobs[i].State = &st
			}
		}
	}
	if cs, _ := res[8].([]any); len(cs) > 0 {
		out.Conflicts = make([]string, 0, len(cs))
		for _, c := range cs {
			if id, ok := c.(string); ok {
				out.Conflicts = append(out.Conflicts, id)
			}
		}
	}
	if v, _ := res[1].(string); v == "1" {
		out.More = true
	}
	if v, _ := res[2].(string); v != "" {
		if f, err := parseScore(v); err == nil {
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
	if ob, _ := res[10].(int64); ob > 0 {
		out.Outbox = int(ob)
	}
	p, _ := res[4].(int64)
	f, _ := res[5].(int64)
	r, _ := res[6].(int64)
	out.Processed, out.Failed, out.Restored = int(p), int(f), int(r)
	if v1, _ := res[7].(int64); v1 > 0 {
		// Layout 1 data waits in this shard: drain a chunk now, and look
		// again with the next Advance, at once (More): what the chunk
		// moved may be due already, and an owner told nothing is due would
		// wait for a notice or its idle poll. A failure is logged and the
		// next Advance tries again.
		s.v1mu.Lock()
		delete(s.v1checked, lease.ShardRef)
		s.v1mu.Unlock()
		err := s.drainV1(ctx, lease, sk)
		switch {
		case err == nil:
			out.More = true
		case !errors.Is(err, persistence.ErrLeaseLost):
			s.cfg.Logger.Warn("could not move layout 1 data of the shard into layout 2; retrying with the next batch",
				"queue", lease.Queue, "shard", lease.Shard, "err", err)
		}
	}
	return out, nil
}
