package orderly

import (
	"fmt"
	"sync"
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Emits (docs/contract.md §11): a handler may emit jobs into any queue (its
// own or another) on behalf of an id of its batch:
//
//	func(ctx context.Context, b *orderly.Batch) error {
//		for _, j := range b.Jobs {
//			j.Emit(orderly.Emit{Queue: "notify", ID: j.ID, Payload: []byte("paid")})
//		}
//		return nil
//	}
//
// The emits of an id are committed in the same atomic step as its
// acknowledgement, under the shard's lease, into the shard's outbox: a
// failed id (an error, a PartialFailure naming it, a panic, a timeout), a
// conflict on a stateful queue, a lost lease or a crash commits none of
// them. The shard's owner then enqueues them into their targets through the
// normal enqueue path; if it dies first, the next owner does. Delivery is
// at least once and exactly once in effect where the target merges equal
// payloads (same id, same payload). An emit to a queue that is not
// registered in the store is dropped by the relay, with an error log; an
// emit with an invalid queue name or job fails its id.

// MaxEmitsPerID is the most jobs one handler call may emit for one id; more
// fail the id.
const MaxEmitsPerID = persistence.MaxEmitsPerID

// MaxEmitBytesPerCall bounds the payload bytes one handler call emits, all
// ids together (the emits travel in the script call that settles them): an
// id whose emits would pass it fails, and the ids before it keep theirs.
const MaxEmitBytesPerCall = 16 << 20

// Emit is a job emitted by a handler (Job.Emit).
type Emit struct {
	// Queue is the target queue: any queue, the handler's own included.
	Queue string
	// ID is the emitted job's id; Payload its payload (nil: empty).
	ID      string
	Payload []byte
	// Score orders the payloads of ID; nil means the relay's default
	// (the time it enqueues the job).
	Score *float64
	// PerformIn delays the job from the end of the handler call; 0 means
	// due at once.
	PerformIn time.Duration
	// Headers are the payload's headers (docs/contract.md §10), under the
	// same limits as an enqueue's.
	Headers map[string]string
	// ExpiresIn, when positive, makes the payload expire that long after
	// the end of the handler call (docs/contract.md §3.15); 0 means never.
	ExpiresIn time.Duration
}

// emitBox holds the emits and the result of one id during a call; copies
// of a Job share it.
type emitBox struct {
	mu    sync.Mutex // guards emits, result and hasResult
	emits []Emit
	// result is what SetResult set (hasResult: it was called).
	result    []byte
	hasResult bool
}

// Emit emits jobs on behalf of the job's id, committed with its
// acknowledgement (see the package's notes on emits). Calls add up; at
// most MaxEmitsPerID per id and call. It has no effect on a Job that was
// not handed to a handler by a node.
func (j Job) Emit(e ...Emit) {
	if j.em == nil {
		return
	}
	j.em.mu.Lock()
	defer j.em.mu.Unlock()
	j.em.emits = append(j.em.emits, e...)
}

// emits returns what the call emitted for the job so far.
func (j Job) emits() []Emit {
	if j.em == nil {
		return nil
	}
	j.em.mu.Lock()
	defer j.em.mu.Unlock()
	return append([]Emit(nil), j.em.emits...)
}

// collectEmits puts the emits of the call's succeeded ids on b for the
// settle; an id with a bad emit fails instead (returned with the reason).
// now dates PerformIn.
func collectEmits(b *persistence.Batch, jobs []Job, failed map[string]bool, now time.Time, bad map[string]error) map[string]error {
	total := 0
	for _, e := range b.Emits {
		total += len(e.Job.Payload)
	}
	for _, j := range jobs {
		if failed[j.ID] || bad[j.ID] != nil {
			continue
		}
		ems := j.emits()
		if len(ems) == 0 {
			continue
		}
		out, err := toEmits(j.ID, ems, now)
		if err == nil {
			n := 0
			for _, e := range out {
				n += len(e.Job.Payload)
			}
			if total+n > MaxEmitBytesPerCall {
				err = fmt.Errorf("its emits (%d payload bytes) would take the call's emits over MaxEmitBytesPerCall (%d)", n, MaxEmitBytesPerCall)
			} else {
				total += n
			}
		}
		if err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[j.ID] = err
			continue
		}
		b.Emits = append(b.Emits, out...)
	}
	return bad
}

// toEmits checks the emits of one id and converts them for the store.
func toEmits(from string, ems []Emit, now time.Time) ([]persistence.Emit, error) {
	if len(ems) > MaxEmitsPerID {
		return nil, fmt.Errorf("%d emits is over the limit of %d per id", len(ems), MaxEmitsPerID)
	}
	out := make([]persistence.Emit, len(ems))
	for i, e := range ems {
		if e.PerformIn < 0 || e.ExpiresIn < 0 {
			return nil, fmt.Errorf("emit %d (%s/%s): PerformIn and ExpiresIn must not be negative", i, e.Queue, e.ID)
		}
		pe := persistence.Emit{From: from, Queue: e.Queue, Job: persistence.NewJob{ID: e.ID, Payload: e.Payload, Score: e.Score, Headers: e.Headers}}
		if e.PerformIn > 0 {
			pe.Job.PerformAt = now.Add(e.PerformIn)
		}
		if e.ExpiresIn > 0 {
			pe.Job.ExpiresAt = now.Add(e.ExpiresIn)
		}
		if err := persistence.ValidateEmit(pe, persistence.DefaultMaxPayloadBytes); err != nil {
			return nil, fmt.Errorf("emit %d (%s/%s): %w", i, e.Queue, e.ID, err)
		}
		out[i] = pe
	}
	return out, nil
}
