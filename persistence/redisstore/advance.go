package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Advance implements persistence.ShardStore: one advance.lua call, its
// arguments laid out by advanceArgs and its reply read by
// decodeAdvanceReply; then, when the reply says the shard still holds
// layout 1 data, one step of the upgrade (migrate.go).
func (s *Store) Advance(ctx context.Context, lease persistence.Lease, req persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	if err := checkAdvanceRequest(req); err != nil {
		return persistence.AdvanceResult{}, err
	}
	sk, err := s.leasedKeys(ctx, lease.ShardRef)
	if err != nil {
		return persistence.AdvanceResult{}, err
	}
	// Emits are checked against the default payload limit, as the node
	// checks them before the call; the relay enqueues them under the
	// store's own limit (and drops, logged, what it refuses).
	if err := checkAdvanceWrites(req, max(s.cfg.MaxPayloadBytes, persistence.DefaultMaxPayloadBytes)); err != nil {
		return persistence.AdvanceResult{}, err
	}
	a := newAdvanceArgs(s.now(), lease.Token, req, s.lookForLayout1(ctx, lease.ShardRef))
	cmds, werr := s.runWrite(ctx, []call{{s: scriptAdvance, keys: sk.keys, boxed: sk.boxed, args: a.encode()}})
	res, err := cmds[0].Slice()
	if err != nil {
		if isLeaseLost(err) {
			return persistence.AdvanceResult{}, fmt.Errorf("%w: %s/%d (token %s)", persistence.ErrLeaseLost, lease.Queue, lease.Shard, lease.Token)
		}
		return persistence.AdvanceResult{}, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if werr != nil {
		// The settle and the fetch are on the master but may not survive
		// a failover: a store failure, so the caller retries (the fetched
		// batch stays in flight and is handed out again).
		return persistence.AdvanceResult{}, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, werr)
	}
	out, v1, err := decodeAdvanceReply(res, lease.ShardRef, req.Stateful)
	if err != nil {
		return persistence.AdvanceResult{}, fmt.Errorf("redisstore: advance %s/%d: %w", lease.Queue, lease.Shard, err)
	}
	if v1 > 0 && s.drainLayout1(ctx, lease, sk) {
		// What the drain moved may be due already: the owner looks again
		// at once instead of waiting for a notice or its idle poll.
		out.More = true
	}
	return out, nil
}

// checkAdvanceRequest checks the request's bounds and sequence numbers.
func checkAdvanceRequest(req persistence.AdvanceRequest) error {
	switch {
	case req.Fetch < 0 || req.Fetch > persistence.MaxBatchSize:
		return &persistence.FieldError{Field: "batch_size", Index: -1, Reason: fmt.Sprintf("must be between 0 and %d", persistence.MaxBatchSize)}
	case req.Settle < 0 || req.NextSeq <= 0 || req.NextSeq == req.Settle:
		return &persistence.FieldError{Field: "seq", Index: -1, Reason: "NextSeq must be positive and differ from Settle"}
	case req.MaxRetryCount < 0:
		return &persistence.FieldError{Field: "max_retry_count", Index: -1, Reason: "must not be negative"}
	case req.MaxPayloads < 0 || req.CallTimeout < 0 || req.CallSize < 0 || req.MaxCalls < 0:
		return &persistence.FieldError{Field: "max_payloads_per_call", Index: -1, Reason: "MaxPayloads, CallTimeout, CallSize and MaxCalls must not be negative"}
	}
	return nil
}

// checkAdvanceWrites checks what the settle commits: state writes (only on
// a stateful queue, each within MaxStateBytes), timer times, emits (at most
// persistence.MaxEmitsPerID per id, each a valid job under maxPayload) and
// the feed's bound.
func checkAdvanceWrites(req persistence.AdvanceRequest, maxPayload int) error {
	if !req.Stateful && (len(req.StateWrites) > 0 || len(req.TimerWrites) > 0) {
		return &persistence.FieldError{Field: "state", Index: -1, Reason: "state writes on a queue that is not stateful"}
	}
	for _, w := range req.StateWrites {
		if err := persistence.CheckStateSize(w.Data, req.MaxStateBytes); err != nil {
			return err
		}
	}
	for _, w := range req.TimerWrites {
		if w.Clear {
			continue
		}
		if err := persistence.ValidTime(w.At, "timer"); err != nil {
			return err
		}
	}
	for _, sn := range req.Snoozes {
		if err := persistence.ValidTime(sn.RetryAt, "retry_in"); err != nil {
			return err
		}
	}
	if err := checkEmits(req.Emits, maxPayload); err != nil {
		return err
	}
	if req.FeedMaxLen < 0 {
		return &persistence.FieldError{Field: "feed_max_len", Index: -1, Reason: "must not be negative"}
	}
	if req.RetainFinished < 0 || req.MaxFinished < 0 {
		return &persistence.FieldError{Field: "retain_finished", Index: -1, Reason: "must not be negative"}
	}
	for id, r := range req.Results {
		if err := persistence.CheckResultSize(id, r); err != nil {
			return err
		}
	}
	return nil
}

// checkEmits checks that no id emits more than persistence.MaxEmitsPerID
// jobs and that each is a valid job under maxPayload.
func checkEmits(emits []persistence.Emit, maxPayload int) error {
	if len(emits) == 0 {
		return nil
	}
	per := map[string]int{}
	for _, e := range emits {
		if per[e.From]++; per[e.From] > persistence.MaxEmitsPerID {
			return &persistence.FieldError{Field: "emit", Index: -1,
				Reason: fmt.Sprintf("id %q emits more than %d jobs", e.From, persistence.MaxEmitsPerID)}
		}
		if err := persistence.ValidateEmit(e, maxPayload); err != nil {
			return err
		}
	}
	return nil
}

// advanceArgs is advance.lua's ARGV, in the order of the script's header.
type advanceArgs struct {
	now         string // "" = Redis TIME (Config.Now is the test seam)
	token       string // the caller's lease token
	settle      int64  // seq of the batch to settle, 0 = none
	nextSeq     int64  // seq of the batch to fetch
	fetch       int    // ids to fetch, 0 = settle only
	maxRetry    int
	maxPayloads int // of one id per call
	timeout     any // the call timeout in milliseconds, "" = no deadline kept
	calls       any // ids per call, or "size:max" when MaxCalls bounds a long window
	v1          string
	failures    []persistence.Failure
	skipped     []string
	interrupted []string
	stateful    bool
	stateWrites []persistence.StateWrite
	timerWrites []persistence.TimerWrite
	emits       []persistence.Emit
	checkOutbox bool
	feedMaxLen  int
	// conflictDelay and conflictDelays are AdvanceRequest's.
	conflictDelay  time.Duration
	conflictDelays map[string]time.Duration
	// snoozes, deaths and discards are AdvanceRequest's.
	snoozes  []persistence.Snooze
	deaths   []persistence.Death
	discards []persistence.Discard
	// retain, maxFinished and results are AdvanceRequest's RetainFinished,
	// MaxFinished and Results.
	retain      time.Duration
	maxFinished int
	results     map[string][]byte
	// expired is AdvanceRequest's Expired.
	expired []persistence.Expired
}

// newAdvanceArgs returns the script's arguments for req, whose writes
// checkAdvanceWrites accepts; v1 is "1" to look for layout 1 data.
func newAdvanceArgs(now, token string, req persistence.AdvanceRequest, v1 string) advanceArgs {
	a := advanceArgs{now: now, token: token, settle: req.Settle, nextSeq: req.NextSeq, fetch: req.Fetch,
		maxRetry: req.MaxRetryCount, maxPayloads: req.MaxPayloads, timeout: "", calls: req.CallSize, v1: v1,
		failures: req.Failures, skipped: req.Skipped, interrupted: req.Interrupted,
		stateful: req.Stateful, stateWrites: req.StateWrites, timerWrites: req.TimerWrites,
		emits: req.Emits, checkOutbox: req.CheckOutbox, feedMaxLen: req.FeedMaxLen,
		conflictDelay: req.ConflictDelay, conflictDelays: req.ConflictDelays,
		snoozes: req.Snoozes, deaths: req.Deaths, discards: req.Discards,
		retain: req.RetainFinished, maxFinished: req.MaxFinished, results: req.Results, expired: req.Expired}
	if a.maxFinished <= 0 {
		a.maxFinished = persistence.DefaultMaxFinished
	}
	if a.maxPayloads == 0 {
		a.maxPayloads = persistence.DefaultMaxPayloadsPerCall
	}
	if req.CallTimeout > 0 {
		a.timeout = max(req.CallTimeout.Milliseconds(), 1)
	}
	if req.MaxCalls > 0 {
		a.calls = strconv.Itoa(req.CallSize) + ":" + strconv.Itoa(req.MaxCalls)
	}
	return a
}

// encode lays the arguments out as advance.lua reads them. Numbers go as
// they are: go-redis writes them in decimal, without the string and its
// boxing strconv would cost.
func (a *advanceArgs) encode() []any {
	args := make([]any, 0, 17+4*len(a.failures)+len(a.skipped)+len(a.interrupted))
	args = append(args, a.now, a.token, a.settle, a.nextSeq, a.fetch, a.maxRetry, a.maxPayloads,
		a.timeout, a.calls, a.v1, len(a.failures))
	for _, f := range a.failures {
		at := ""
		if !f.RetryAt.IsZero() {
			at = formatFloat(persistence.UnixSeconds(f.RetryAt))
		}
		hold := ""
		if !f.Hold.IsZero() {
			hold = formatFloat(persistence.UnixSeconds(f.Hold))
		}
		args = append(args, f.ID, f.Error, at, hold)
	}
	args = append(args, len(a.skipped))
	for _, id := range a.skipped {
		args = append(args, id)
	}
	args = append(args, len(a.interrupted))
	for _, id := range a.interrupted {
		args = append(args, id)
	}
	if a.stateful {
		args = appendWrites(args, a.stateWrites, a.timerWrites)
	} else {
		args = append(args, "0", "0", "0")
	}
	args = append(args, strconv.Itoa(len(a.emits)))
	for _, e := range a.emits {
		args = append(args, e.From, encodeEmit(e))
	}
	if a.checkOutbox {
		args = append(args, "1")
	} else {
		args = append(args, "0")
	}
	args = append(args, strconv.Itoa(a.feedMaxLen))
	// The conflict delays, always sent: the outcomes follow them.
	args = append(args, max(a.conflictDelay.Microseconds(), 0), len(a.conflictDelays))
	for id, d := range a.conflictDelays {
		args = append(args, id, max(d.Microseconds(), 0))
	}
	args = a.appendOutcomes(args)
	args = a.appendRetention(args)
	return a.appendExpired(args)
}

// appendExpired appends the expired payloads (docs/contract.md §3.15),
// the script's last section, sent only when there are some: their number
// of ids, then per id the id and the 1-based positions of its expired
// payloads, comma-separated.
func (a *advanceArgs) appendExpired(args []any) []any {
	if len(a.expired) == 0 {
		return args
	}
	args = append(args, len(a.expired))
	for _, e := range a.expired {
		pos := make([]byte, 0, 4*len(e.Payloads))
		for i, p := range e.Payloads {
			if i > 0 {
				pos = append(pos, ',')
			}
			pos = strconv.AppendInt(pos, int64(p+1), 10)
		}
		args = append(args, e.ID, string(pos))
	}
	return args
}

// appendOutcomes appends the outcomes the handler chose, the script's
// section after the conflict delays: the snoozed ids with their due times
// in milliseconds, then the dead and the discarded ids with their reasons,
// each list after its length.
func (a *advanceArgs) appendOutcomes(args []any) []any {
	args = append(args, len(a.snoozes))
	for _, sn := range a.snoozes {
		args = append(args, sn.ID, sn.RetryAt.UnixMilli())
	}
	args = append(args, len(a.deaths))
	for _, d := range a.deaths {
		args = append(args, d.ID, d.Reason)
	}
	args = append(args, len(a.discards))
	for _, d := range a.discards {
		args = append(args, d.ID, d.Reason)
	}
	return args
}

// appendRetention appends the retention section: retain_finished in
// milliseconds ("0": off, and nothing more), the most records kept and the
// results.
func (a *advanceArgs) appendRetention(args []any) []any {
	if a.retain <= 0 {
		return append(args, "0")
	}
	args = append(args, max(a.retain.Milliseconds(), 1), a.maxFinished, len(a.results))
	for id, r := range a.results {
		args = append(args, id, r)
	}
	return args
}

// appendWrites appends a stateful queue's part of the arguments: "1", the
// state writes and the timer writes, each list after its length.
func appendWrites(args []any, states []persistence.StateWrite, timers []persistence.TimerWrite) []any {
	args = append(args, "1", strconv.Itoa(len(states)))
	for _, w := range states {
		if w.Delete {
			args = append(args, w.ID, "d", "")
		} else {
			args = append(args, w.ID, "s", w.Data)
		}
	}
	args = append(args, strconv.Itoa(len(timers)))
	for _, w := range timers {
		if w.Clear {
			args = append(args, w.ID, "c", "")
		} else {
			args = append(args, w.ID, "s", formatFloat(persistence.UnixSeconds(w.At)))
		}
	}
	return args
}

// advanceReply indexes advance.lua's reply, in the order of the script's
// header.
const (
	replyBatch = iota
	replyMore
	replyNextDue
	replyDead
	replyProcessed
	replyFailed
	replyRestored
	replyV1
	replyConflicts
	replyStates
	replyOutbox
	replySnoozed
	replyDiscarded
	replyExpired
	replyReshard
	replyLen
)

// decodeAdvanceReply reads advance.lua's reply into the result of an
// Advance of the shard ref, and returns the reply's layout 1 count (> 0:
// layout 1 data waits in the shard).
func decodeAdvanceReply(res []any, ref persistence.ShardRef, stateful bool) (persistence.AdvanceResult, int64, error) {
	var out persistence.AdvanceResult
	if len(res) != replyLen {
		return out, 0, fmt.Errorf("unexpected reply of %d values", len(res))
	}
	if enc, _ := res[replyBatch].(string); enc != "" {
		b, err := decodeFetched(enc, ref, stateful, res[replyStates])
		if err != nil {
			return out, 0, err
		}
		out.Batch = b
	}
	if cs, _ := res[replyConflicts].([]any); len(cs) > 0 {
		out.Conflicts = make([]string, 0, len(cs))
		for _, c := range cs {
			if id, ok := c.(string); ok {
				out.Conflicts = append(out.Conflicts, id)
			}
		}
	}
	if v, _ := res[replyMore].(string); v == "1" {
		out.More = true
	}
	if v, _ := res[replyNextDue].(string); v != "" {
		if f, err := parseScore(v); err == nil {
			out.NextDue = persistence.FromUnixSeconds(f)
		}
	}
	if enc, _ := res[replyDead].(string); enc != "" {
		_, dead, err := decodeBatch(enc)
		if err != nil {
			return out, 0, fmt.Errorf("dead jobs: %w", err)
		}
		out.Dead = dead
	}
	if ob, _ := res[replyOutbox].(int64); ob > 0 {
		out.Outbox = int(ob)
	}
	p, _ := res[replyProcessed].(int64)
	f, _ := res[replyFailed].(int64)
	r, _ := res[replyRestored].(int64)
	out.Processed, out.Failed, out.Restored = int(p), int(f), int(r)
	sn, _ := res[replySnoozed].(int64)
	di, _ := res[replyDiscarded].(int64)
	ex, _ := res[replyExpired].(int64)
	out.Snoozed, out.Discarded, out.Expired = int(sn), int(di), int(ex)
	switch v, _ := res[replyReshard].(string); v {
	case "drain":
		out.Draining = true
	case "moved":
		out.Moved = true
	}
	v1, _ := res[replyV1].(int64)
	return out, v1, nil
}

// decodeFetched decodes the fetched batch and, on a stateful queue, gives
// each job its state from the reply's states.
func decodeFetched(enc string, ref persistence.ShardRef, stateful bool, states any) (*persistence.Batch, error) {
	h, jobs, err := decodeBatch(enc)
	if err != nil {
		return nil, err
	}
	b := &persistence.Batch{
		ShardRef:  ref,
		Seq:       h.seq,
		Token:     h.token,
		FetchedAt: persistence.FromUnixSeconds(h.fetchedAt),
		Jobs:      jobs,
	}
	if !stateful {
		return b, nil
	}
	list, _ := states.([]any)
	for i := range jobs {
		var st persistence.State
		if i < len(list) {
			if st, err = decodeState(list[i]); err != nil {
				return nil, fmt.Errorf("state of %q: %w", jobs[i].ID, err)
			}
		}
		if jobs[i].State != nil && st.Version != jobs[i].State.Version {
			// A retried Advance whose state changed since: the settle
			// will see the conflict; hand out what the in-flight
			// record holds.
			st.Version = jobs[i].State.Version
		}
		jobs[i].State = &st
	}
	return b, nil
}
