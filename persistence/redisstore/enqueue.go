package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

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
func (s *Store) enqueue(ctx context.Context, queue string, jobs []persistence.NewJob, from relayFrom) (int, error) {
	shards, err := s.shardsOf(ctx, queue)
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
	now := s.now()

	byShard := make(map[int][]int, shards)
	order := make([]int, 0, shards)
	for i := range jobs {
		sh := persistence.ShardOf(jobs[i].ID, shards)
		if _, ok := byShard[sh]; !ok {
			order = append(order, sh)
		}
		byShard[sh] = append(byShard[sh], i)
	}

	var calls []call
	var deduped []int // per call: its job count when it carries dedup keys, else -1
	for _, sh := range order {
		sk := s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh})
		idx := byShard[sh]
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
			c, withD := s.enqueueCall(ctx, enqueueCallArgs{queue: queue, shard: sh, mode: mode, now: now, sk: sk},
				jobs, idx[start:end], from)
			calls = append(calls, c)
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
	if err := firstErr(cmds); err != nil {
		return 0, fmt.Errorf("redisstore: enqueue to %s: %w", queue, err)
	}
	if werr != nil {
		return 0, fmt.Errorf("redisstore: enqueue to %s: %w", queue, werr)
	}
	dups := 0
	for i, n := range deduped {
		if n < 0 {
			continue
		}
		// The script counts the jobs it wrote; the rest were duplicates.
		w, err := cmds[i].Int()
		if err != nil {
			return 0, fmt.Errorf("redisstore: enqueue to %s: %w", queue, err)
		}
		dups += n - w
	}
	return dups, nil
}

// enqueueCallArgs is what the enqueue.lua calls of one shard share.
type enqueueCallArgs struct {
	queue string
	shard int
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
	args = append(args, a.now, m, s.noticeChannel(ctx, a.queue, a.shard), strconv.Itoa(a.shard))
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
	return call{s: scriptEnqueue, keys: keys, args: args}, withD
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
// mode on the job's shard.
func (s *Store) EnqueueTick(ctx context.Context, queue, name string, tick time.Time, job persistence.NewJob) (bool, error) {
	if name == "" {
		return false, fmt.Errorf("%w: a periodic job needs a name", persistence.ErrInvalid)
	}
	shards, err := s.shardsOf(ctx, queue)
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
	sh := persistence.ShardOf(job.ID, shards)
	sk := s.keysOf(persistence.ShardRef{Queue: queue, Shard: sh})
	keys := sk.keys
	if mode == modeUpgrading {
		keys = append(sk.with(), sk.v1Payloads(job.ID))
	}
	args := appendJob([]any{s.now(), mode + "t", s.noticeChannel(ctx, queue, sh), strconv.Itoa(sh)}, &job)
	args = append(args, name, tick.UnixMilli())
	cmds, werr := s.runWrite(ctx, []call{{s: scriptEnqueue, keys: keys, args: args}})
	n, err := cmds[0].Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: enqueue tick %s of %s: %w", name, queue, err)
	}
	if werr != nil {
		return false, fmt.Errorf("redisstore: enqueue tick %s of %s: %w", name, queue, werr)
	}
	return n > 0, nil
}
