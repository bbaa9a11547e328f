package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// Enqueue implements persistence.Producer. Jobs are grouped by shard and sorted
// by id (stable: the jobs of one id keep their order), so that the jobs of
// one call enter the shard's fifo; each shard gets one script call per
// EnqueueChunk jobs, and all calls go out in one pipeline.
func (s *Store) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	_, err := s.enqueue(ctx, queue, jobs, relayFrom{})
	return err
}

// EnqueueReport implements persistence.EnqueueReporter: Enqueue, counting
// the jobs that were duplicates under the queue's dedup window
// (docs/contract.md §3.12).
func (s *Store) EnqueueReport(ctx context.Context, queue string, jobs []persistence.NewJob) (persistence.EnqueueResult, error) {
	dups, err := s.enqueue(ctx, queue, jobs, relayFrom{})
	return persistence.EnqueueResult{Duplicates: dups}, err
}

// relayFrom names the outbox relayed jobs come from (outbox.go): enqueue.lua
// then writes only the jobs whose entries are after the source's relay mark
// on their shard, and moves the mark.
type relayFrom struct {
	source  string   // "<queue>/<shard>" of the outbox; "" for a plain enqueue
	entries []string // the outbox entry id of each job
}

// enqueue is Enqueue, relaying from the outbox that from names, if any. It
// returns how many jobs were duplicates under the queue's dedup window.
//
// While a reshard runs, a job goes to its id's shard of the drained
// generation until that shard is drained; a shard that answers RESHARDED
// (drained, or of another generation than the cached shape says) sends its
// jobs to their shards of the shape read again, and one that answers
// SEALED (its last export on its way) takes them a moment later
// (docs/storage.md section 11).
func (s *Store) enqueue(ctx context.Context, queue string, jobs []persistence.NewJob, from relayFrom) (int, error) {
	sh, err := s.shapeOf(ctx, queue)
	if err != nil {
		return 0, err
	}
	if err := persistence.ValidateJobs(jobs, s.cfg.MaxPayloadBytes); err != nil {
		return 0, err
	}
	if len(jobs) == 0 {
		return 0, nil
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return 0, err
	}
	pending := make([]int, len(jobs))
	for i := range pending {
		pending[i] = i
	}
	dups := 0
	back := map[int]bool{} // a relay's jobs a drained shard sent back
	for attempt := 0; ; attempt++ {
		r := enqueueRun{queue: queue, shape: s.relayShape(queue, sh, from), mode: mode, now: s.now(), relay: from.source != "", back: back}
		send, later := pending, []int(nil)
		if from.source != "" {
			send, later = s.relayFirst(r, jobs, pending)
		}
		d, again, sealed, err := s.enqueueOnce(ctx, r, jobs, send, from)
		dups += d
		if err != nil || len(again)+len(later) == 0 {
			return dups, err
		}
		if len(again) > 0 {
			if attempt >= reshardRetries {
				return dups, fmt.Errorf("redisstore: enqueue to %s: %w", queue, persistence.ErrResharding)
			}
			if sealed {
				if err := sleepCtx(ctx, sealedWait(attempt)); err != nil {
					return dups, fmt.Errorf("redisstore: enqueue to %s: %w", queue, err)
				}
			}
			gen := sh.Current.Gen
			if sh, err = s.refreshShape(ctx, queue); err != nil {
				return dups, err
			}
			if sh.Current.Gen != gen {
				clear(back) // another reshard: back to the rule
			}
		}
		// In outbox order again (a relay's calls depend on it).
		pending = append(again, later...)
		slices.Sort(pending)
	}
}

// relayFirst splits a relay's jobs while a reshard runs: those routed to
// the drained generation go first, the others (those a drained shard sent
// back) after them. A relay mark is per target shard: were a job sent to its
// new shard beside an earlier entry its old shard then sends back
// (RESHARDED), the new shard's mark would already be past that entry, which
// would be skipped there. Sent after, the new shard gets both in one call,
// in outbox order.
func (s *Store) relayFirst(r enqueueRun, jobs []persistence.NewJob, pending []int) ([]int, []int) {
	if !r.shape.Resharding() {
		return pending, nil
	}
	var first, later []int
	for _, i := range pending {
		if _, gen := s.routeJob(r, jobs, i); gen == r.shape.From.Gen {
			first = append(first, i)
		} else {
			later = append(later, i)
		}
	}
	if len(first) == 0 {
		return later, nil
	}
	return first, later
}

// routeJob returns the shard and generation job i goes to (route). While a
// reshard runs, a relay's jobs go to their old shards, drained or not,
// until one sends them back: a drained shard's relay mark then says which it
// took before (notRelayedTo), so that a relay that runs again hands no emit
// twice.
func (s *Store) routeJob(r enqueueRun, jobs []persistence.NewJob, i int) (int, int) {
	if r.back != nil && r.relay && r.shape.Resharding() {
		if r.back[i] {
			return r.shape.Current.Shard(jobs[i].ID), r.shape.Current.Gen
		}
		return r.shape.From.Shard(jobs[i].ID), r.shape.From.Gen
	}
	return s.route(r.shape, r.queue, jobs[i].ID)
}

// notRelayedTo returns the jobs idx of a relay that a drained shard (of
// generation gen) has not taken before it was drained: those whose outbox
// entry is after the source's relay mark there (all of them for a plain
// enqueue). The others were written into the shard and moved with its ids;
// sent to their new shard too, they would be handed over twice
// (docs/storage.md section 11). A shard of another generation (its number
// taken by a later one: the caller's shape was stale) proves nothing: all
// of them go on, to be routed by the shape read again.
func (s *Store) notRelayedTo(ctx context.Context, queue string, shard, gen int, from relayFrom, idx []int) ([]int, error) {
	if from.source == "" {
		return idx, nil
	}
	meta := s.keysOf(persistence.ShardRef{Queue: queue, Shard: shard}).keys[kMeta]
	v, err := s.rdb.HMGet(ctx, meta, "relay:"+from.source, "gen").Result()
	if err != nil {
		return nil, fmt.Errorf("relay mark of %s/%d: %w", queue, shard, err)
	}
	mark, _ := v[0].(string)
	g, ok := v[1].(string)
	if !ok {
		g = "1"
	}
	if mark == "" || g != strconv.Itoa(gen) {
		return idx, nil
	}
	out := idx[:0:0]
	for _, i := range idx {
		if streamAfter(from.entries[i], mark) {
			out = append(out, i)
		}
	}
	return out, nil
}

// streamAfter reports whether stream id a ("<ms>-<seq>") comes after b.
func streamAfter(a, b string) bool {
	ams, aseq, _ := strings.Cut(a, "-")
	bms, bseq, _ := strings.Cut(b, "-")
	am, _ := strconv.ParseUint(ams, 10, 64)
	bm, _ := strconv.ParseUint(bms, 10, 64)
	if am != bm {
		return am > bm
	}
	as, _ := strconv.ParseUint(aseq, 10, 64)
	bs, _ := strconv.ParseUint(bseq, 10, 64)
	return as > bs
}

// reshardRetries is how often an enqueue follows a reshard's redirections
// before it gives up with ErrResharding: with sealedWait's waits, about 20 s
// for a sealed shard whose owner died before it was drained (a new owner
// takes it over within a lease).
const reshardRetries = 200

// sealedWait is how long an enqueue waits before its attempt-th retry on a
// sealed shard: 5 ms, doubling up to 100 ms.
func sealedWait(attempt int) time.Duration {
	return min(5*time.Millisecond<<min(attempt, 5), 100*time.Millisecond)
}

// enqueueRun is what the calls of one enqueue attempt share.
type enqueueRun struct {
	queue string
	shape persistence.QueueShape
	mode  string
	now   string
	relay bool         // the outbox relay's (relayFrom set)
	back  map[int]bool // a relay's jobs a drained shard sent back (routeJob)
}

// enqueueOnce sends the jobs idx, grouped by shard, and returns the
// duplicates counted, the jobs a shard sent back (RESHARDED or SEALED) and
// whether one was sealed.
func (s *Store) enqueueOnce(ctx context.Context, r enqueueRun, jobs []persistence.NewJob, pending []int, from relayFrom) (int, []int, bool, error) {
	type target struct{ shard, gen int }
	byShard := make(map[target][]int)
	var order []target
	for _, i := range pending {
		sh, gen := s.routeJob(r, jobs, i)
		t := target{sh, gen}
		if _, ok := byShard[t]; !ok {
			order = append(order, t)
		}
		byShard[t] = append(byShard[t], i)
	}

	var calls []call
	var parts [][]int
	var gens []int    // per call: the generation it was routed by
	var deduped []int // per call: its job count when it carries dedup keys, else -1
	for _, t := range order {
		sk := s.keysOf(persistence.ShardRef{Queue: r.queue, Shard: t.shard})
		idx := byShard[t]
		byID := func(a, b int) int { return cmp.Compare(jobs[a].ID, jobs[b].ID) }
		if from.source == "" {
			slices.SortStableFunc(idx, byID)
		}
		for start := 0; start < len(idx); start += s.cfg.EnqueueChunk {
			end := min(start+s.cfg.EnqueueChunk, len(idx))
			if from.source != "" {
				// A relay's jobs come in outbox order: each call takes
				// the entries after the previous call's, so that the
				// relay mark a call moves skips nothing of the next.
				slices.SortStableFunc(idx[start:end], byID)
			}
			c, withD := s.enqueueCall(ctx, enqueueCallArgs{queue: r.queue, shard: t.shard, gen: t.gen, mode: r.mode, now: r.now, sk: sk},
				jobs, idx[start:end], from)
			calls = append(calls, c)
			parts = append(parts, idx[start:end])
			gens = append(gens, t.gen)
			if withD {
				deduped = append(deduped, end-start)
			} else {
				deduped = append(deduped, -1)
			}
		}
	}
	// A failed enqueue may have written part of the jobs; sending it again is
	// safe (payloads merge, the lower score wins; a job with a dedup key
	// that was written is a duplicate the second time).
	cmds, werr := s.runWrite(ctx, calls)
	var again []int
	sealed := false
	for i, c := range cmds {
		switch err := c.Err(); {
		case err == nil:
		case redis.HasErrorPrefix(err, "RESHARDED"):
			s.markMoved(r.queue, calls[i].shard)
			part, err := s.notRelayedTo(ctx, r.queue, calls[i].shard, gens[i], from, parts[i])
			if err != nil {
				return 0, nil, false, fmt.Errorf("redisstore: enqueue to %s: %w", r.queue, err)
			}
			for _, j := range part {
				r.back[j] = true
			}
			again = append(again, part...)
		case redis.HasErrorPrefix(err, "SEALED"):
			sealed = true
			again = append(again, parts[i]...)
		default:
			return 0, nil, false, fmt.Errorf("redisstore: enqueue to %s: %w", r.queue, err)
		}
	}
	if werr != nil {
		return 0, nil, false, fmt.Errorf("redisstore: enqueue to %s: %w", r.queue, werr)
	}
	dups := 0
	for i, n := range deduped {
		if n < 0 || cmds[i].Err() != nil {
			continue
		}
		// The script counts the jobs it wrote; the rest were duplicates.
		w, err := cmds[i].Int()
		if err != nil {
			return 0, nil, false, fmt.Errorf("redisstore: enqueue to %s: %w", r.queue, err)
		}
		dups += n - w
	}
	return dups, again, sealed, nil
}

// enqueueCallArgs is what the enqueue.lua calls of one shard share.
type enqueueCallArgs struct {
	queue string
	shard int
	gen   int // the generation the jobs were routed by (enqueue.lua checks it)
	mode  string
	now   string // "": Redis TIME
	sk    shardKeys
}

// enqueueCall builds the enqueue.lua call of the jobs idx of one shard; it
// reports whether the call carries dedup keys.
func (s *Store) enqueueCall(ctx context.Context, a enqueueCallArgs, jobs []persistence.NewJob, idx []int, from relayFrom) (call, bool) {
	// A call whose jobs carry headers sends five values per job
	// (mode suffix "h"); others send four, as before.
	// A relay's call names its outbox (mode "r") and ends with
	// each job's entry.
	withH, per, m := false, 4, a.mode
	if from.source != "" {
		m += "r"
	}
	for _, i := range idx {
		if len(jobs[i].Headers) > 0 || !jobs[i].ExpiresAt.IsZero() {
			withH, per, m = true, 5, m+"h"
			break
		}
	}
	// A call whose jobs carry dedup keys (never a relay's) sends
	// one more value per job, last (mode suffix "d").
	withD := false
	if from.source == "" {
		for _, i := range idx {
			if jobs[i].DedupKey != "" {
				withD, per, m = true, per+1, m+"d"
				break
			}
		}
	}
	// A call whose jobs carry a priority other than 1 sends one more value
	// per job, last (mode suffix "p", after any "h" and "d").
	withP := false
	for _, i := range idx {
		if p := jobs[i].Priority; p > persistence.DefaultPriority {
			withP, per, m = true, per+1, m+"p"
			break
		}
	}
	args := make([]any, 0, 5+(per+1)*(len(idx)))
	args = append(args, a.now, m, s.noticeChannel(ctx, a.queue, a.shard), strconv.Itoa(a.shard)+"/"+strconv.Itoa(a.gen))
	keys := a.sk.keys
	if a.mode == modeUpgrading {
		keys = a.sk.with()
	}
	for _, i := range idx {
		j := &jobs[i]
		args = appendJob(args, j)
		if withH {
			args = append(args, encodeHeaders(j.Headers, j.ExpiresAt))
		}
		if withD {
			args = append(args, j.DedupKey)
		}
		if withP {
			args = append(args, priorityArg(j.Priority))
		}
		if a.mode == modeUpgrading {
			keys = append(keys, a.sk.v1Payloads(j.ID))
		}
	}
	if from.source != "" {
		args = append(args, from.source)
		for _, i := range idx {
			args = append(args, from.entries[i])
		}
	}
	return call{s: scriptEnqueue, keys: keys, args: args, shard: a.shard}, withD
}

// priorityArg is a job's priority as enqueue.lua reads it ("" = 1).
func priorityArg(p int) string {
	if p <= persistence.DefaultPriority {
		return ""
	}
	return strconv.Itoa(p)
}

// appendJob appends a job's four values of enqueue.lua's ARGV.
func appendJob(args []any, j *persistence.NewJob) []any {
	sc := ""
	if j.Score != nil {
		sc = formatFloat(*j.Score)
	}
	at := ""
	if !j.PerformAt.IsZero() {
		at = formatFloat(persistence.UnixSeconds(j.PerformAt))
	}
	payload := j.Payload
	if payload == nil {
		payload = []byte{}
	}
	return append(args, j.ID, payload, sc, at)
}

// EnqueueTick implements persistence.ControlStore: one enqueue.lua call in tick
// mode on the job's shard (routed as Enqueue routes, docs/storage.md
// section 11).
func (s *Store) EnqueueTick(ctx context.Context, queue, name string, tick time.Time, job persistence.NewJob) (bool, error) {
	if name == "" {
		return false, fmt.Errorf("%w: a periodic job needs a name", persistence.ErrInvalid)
	}
	shape, err := s.shapeOf(ctx, queue)
	if err != nil {
		return false, err
	}
	if err := persistence.ValidateJobs([]persistence.NewJob{job}, s.cfg.MaxPayloadBytes); err != nil {
		return false, err
	}
	mode, err := s.mode(ctx)
	if err != nil {
		return false, err
	}
	for attempt := 0; ; attempt++ {
		sh, gen := s.route(shape, queue, job.ID)
		sk := s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh})
		keys := sk.keys
		if mode == modeUpgrading {
			keys = append(sk.with(), sk.v1Payloads(job.ID))
		}
		args := appendJob([]any{s.now(), mode + "t", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh) + "/" + strconv.Itoa(gen)}, &job)
		args = append(args, name, tick.UnixMilli())
		cmds, werr := s.runWrite(ctx, []call{{s: scriptEnqueue, keys: keys, args: args}})
		err := cmds[0].Err()
		if (redis.HasErrorPrefix(err, "RESHARDED") || redis.HasErrorPrefix(err, "SEALED")) && attempt < reshardRetries {
			if redis.HasErrorPrefix(err, "RESHARDED") {
				s.markMoved(queue, sh)
			} else if err := sleepCtx(ctx, sealedWait(attempt)); err != nil {
				return false, err
			}
			if shape, err = s.refreshShape(ctx, queue); err != nil {
				return false, err
			}
			continue
		}
		n, err := cmds[0].Int()
		if err != nil {
			return false, fmt.Errorf("redisstore: enqueue tick %s of %s: %w", name, queue, err)
		}
		if werr != nil {
			return false, fmt.Errorf("redisstore: enqueue tick %s of %s: %w", name, queue, werr)
		}
		return n > 0, nil
	}
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
