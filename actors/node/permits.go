package node

import (
	"cmp"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Scheduler names how a node hands its concurrency permits to shards that
// have work.
type Scheduler uint8

const (
	// SchedulerLag serves the shard whose oldest due job waited longest
	// (Lowkiq's default).
	SchedulerLag Scheduler = iota
	// SchedulerSeq serves shards in turn (round robin).
	SchedulerSeq
	// SchedulerWeighted shares the permits between queues in proportion
	// to their weights (Config.Weights), counted in handler calls: each
	// grant charges its queue 1/weight, and the queue charged least goes
	// next (stride scheduling). Within a queue, the oldest work first.
	SchedulerWeighted
	// SchedulerStrict serves the queue of the highest weight first, and
	// a lower one only while no shard of a higher one waits. Within a
	// weight, the oldest work first.
	SchedulerStrict
)

// String returns the scheduler's name as configured: "lag", "seq",
// "weighted" or "strict".
func (s Scheduler) String() string {
	switch s {
	case SchedulerSeq:
		return "seq"
	case SchedulerWeighted:
		return "weighted"
	case SchedulerStrict:
		return "strict"
	}
	return "lag"
}

// permits is the node-wide concurrency limit: at most size shards run a
// batch at once. It is plain data owned by the node actor, with the queue
// controls it grants by (docs/contract.md §9): a shard of a paused queue,
// or of a limited queue whose shards already hold as many permits on this
// node as the node holds of the queue's cluster-wide max_concurrency, may
// not hold a permit (it is blocked): its request waits in line, and a
// holder that finished a batch yields.
type permits struct {
	sched Scheduler
	// paused are the paused queues (Controls); limit the max_concurrency
	// of the limited queues and held the permits this node holds of each
	// (0 until the permit keeper's first answer, and while it cannot
	// renew them).
	paused  map[string]bool
	limit   map[string]int
	held    map[string]int
	free    int
	holders map[persistence.ShardRef]bool
	waiters []waiter
	arrived uint64
	// weight is each queue's weight (1 when absent), and pass how much
	// SchedulerWeighted has charged it (1/weight per grant).
	weight map[string]int
	pass   map[string]float64
}

type waiter struct {
	ref   persistence.ShardRef
	since time.Time
	order uint64
}

func newPermits(size int, sched Scheduler, limits, weights map[string]int) *permits {
	return &permits{sched: sched, limit: limits, held: map[string]int{}, free: size, holders: map[persistence.ShardRef]bool{},
		weight: weights, pass: map[string]float64{}}
}

// weightOf returns the queue's weight (1 when none is set).
func (p *permits) weightOf(q string) int {
	if w := p.weight[q]; w > 0 {
		return w
	}
	return 1
}

// take hands ref a permit.
func (p *permits) take(ref persistence.ShardRef) {
	p.free--
	p.holders[ref] = true
	if p.sched == SchedulerWeighted {
		p.pass[ref.Queue] += 1 / float64(p.weightOf(ref.Queue))
	}
}

// activate brings a queue that neither holds nor waits for a permit up to
// the least charged active queue, so that a queue idle for a while does
// not take every permit until it has caught up on what it was not charged.
func (p *permits) activate(q string) {
	if p.sched != SchedulerWeighted {
		return
	}
	floor, any := 0.0, false
	for h := range p.holders {
		if h.Queue == q {
			return
		}
		if v := p.pass[h.Queue]; !any || v < floor {
			floor, any = v, true
		}
	}
	for _, w := range p.waiters {
		if w.ref.Queue == q {
			return
		}
		if v := p.pass[w.ref.Queue]; !any || v < floor {
			floor, any = v, true
		}
	}
	if any && p.pass[q] < floor {
		p.pass[q] = floor
	}
}

// setHeld records the permits the node holds of its limited queues and
// reports whether any grew (waiters may be served now).
func (p *permits) setHeld(held map[string]int) bool {
	grew := false
	for q, n := range held {
		if n > p.held[q] {
			grew = true
		}
		p.held[q] = n
	}
	return grew
}

// request asks for a permit; it reports whether ref got one now (otherwise
// it waits in line).
func (p *permits) request(ref persistence.ShardRef, since time.Time) bool {
	if p.holders[ref] {
		return true
	}
	p.activate(ref.Queue)
	if p.free > 0 && !p.isBlocked(ref) && p.best() < 0 {
		p.take(ref)
		return true
	}
	p.wait(ref, since)
	return false
}

func (p *permits) wait(ref persistence.ShardRef, since time.Time) {
	for _, w := range p.waiters {
		if w.ref == ref {
			return
		}
	}
	p.arrived++
	p.waiters = append(p.waiters, waiter{ref: ref, since: since, order: p.arrived})
}

// keep answers a holder that finished a batch and wants another: it keeps
// its permit unless a waiter goes first (seq: anyone waiting; lag: a waiter
// whose oldest job is older) or its queue is blocked. A holder that yields
// joins the line.
func (p *permits) keep(ref persistence.ShardRef, since time.Time) bool {
	if !p.holders[ref] {
		return p.request(ref, since)
	}
	// Decide as if ref had returned its permit, so that a waiter of the
	// same limited queue can take its turn.
	delete(p.holders, ref)
	p.free++
	if p.sched == SchedulerWeighted || p.sched == SchedulerStrict {
		return p.keepByWeight(ref, since)
	}
	if !p.isBlocked(ref) {
		best := p.best()
		if best < 0 || (p.sched == SchedulerLag && !p.waiters[best].since.Before(since)) {
			p.holders[ref] = true
			p.free--
			return true
		}
	}
	p.wait(ref, since)
	return false
}

// keepByWeight is keep for the weighted and strict schedulers: ref, whose
// permit is back, joins the line and keeps a permit if it is the waiter
// served next.
func (p *permits) keepByWeight(ref persistence.ShardRef, since time.Time) bool {
	p.wait(ref, since)
	if p.isBlocked(ref) {
		return false
	}
	if i := p.best(); i >= 0 && p.waiters[i].ref == ref {
		p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
		p.take(ref)
		return true
	}
	return false
}

// release gives ref's permit back (or removes it from the line).
func (p *permits) release(ref persistence.ShardRef) {
	if p.holders[ref] {
		delete(p.holders, ref)
		p.free++
	}
	for i, w := range p.waiters {
		if w.ref == ref {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			break
		}
	}
}

// grant hands free permits to waiters, best first, and returns who got one.
func (p *permits) grant() []persistence.ShardRef {
	var out []persistence.ShardRef
	for p.free > 0 {
		i := p.best()
		if i < 0 {
			break
		}
		w := p.waiters[i]
		p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
		p.take(w.ref)
		out = append(out, w.ref)
	}
	return out
}

// isBlocked reports whether ref may not hold a permit now.
func (p *permits) isBlocked(ref persistence.ShardRef) bool {
	if p.paused[ref.Queue] {
		return true
	}
	if _, limited := p.limit[ref.Queue]; !limited {
		return false
	}
	others := 0
	for h := range p.holders {
		if h.Queue == ref.Queue && h != ref {
			others++
		}
	}
	return others >= p.held[ref.Queue]
}

// demand counts, per queue, the shards holding or waiting for a permit.
func (p *permits) demand() map[string]int {
	out := map[string]int{}
	for h := range p.holders {
		out[h.Queue]++
	}
	for _, w := range p.waiters {
		if !p.holders[w.ref] {
			out[w.ref.Queue]++
		}
	}
	return out
}

// best returns the index of the waiter served next (blocked waiters are
// passed over), or -1.
func (p *permits) best() int {
	best := -1
	for i, w := range p.waiters {
		if p.isBlocked(w.ref) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := p.waiters[best]
		if c := p.compareQueues(w.ref.Queue, b.ref.Queue); c != 0 {
			if c < 0 {
				best = i
			}
			continue
		}
		if p.sched != SchedulerSeq && !w.since.Equal(b.since) {
			if w.since.Before(b.since) {
				best = i
			}
			continue
		}
		if w.order < b.order {
			best = i
		}
	}
	return best
}

// compareQueues orders two queues for the weighted and strict schedulers:
// -1 when a's waiters go before b's, +1 after, 0 when the queues do not
// decide (the same queue, or another scheduler).
func (p *permits) compareQueues(a, b string) int {
	if a == b {
		return 0
	}
	switch p.sched {
	case SchedulerStrict:
		return cmp.Compare(p.weightOf(b), p.weightOf(a))
	case SchedulerWeighted:
		// The queue whose next grant leaves it charged least goes first.
		return cmp.Compare(p.pass[a]+1/float64(p.weightOf(a)), p.pass[b]+1/float64(p.weightOf(b)))
	}
	return 0
}
