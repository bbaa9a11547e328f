package orderly

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/orderlyhq/orderly/actors/shard"
	"github.com/orderlyhq/orderly/persistence"
)

// Defaults of Worker.
const (
	// DefaultShards is the number of shards of a queue.
	DefaultShards = 5
	// DefaultBatchSize is the most ids handed to one handler call.
	DefaultBatchSize = 1
	// DefaultCallTimeout bounds a handler call when Worker.Timeout is 0.
	DefaultCallTimeout = shard.DefaultCallTimeout
	// DefaultMaxPayloadsPerCall is Worker.MaxPayloadsPerCall's default.
	DefaultMaxPayloadsPerCall = persistence.DefaultMaxPayloadsPerCall
	// MaxMaxPayloadsPerCall is the largest Worker.MaxPayloadsPerCall.
	MaxMaxPayloadsPerCall = 100_000
	// DefaultPrefetch is the least number of ids a shard fetches per round
	// trip to Redis.
	DefaultPrefetch = 10
	// DefaultMaxPrefetch is the most ids a busy shard fetches per round
	// trip when neither Prefetch nor MaxPrefetch is set: a script call
	// costs Redis about half as much per job in windows of 100 ids as in
	// windows of 10 (docs/storage.md §6).
	DefaultMaxPrefetch = 100
	// DefaultMaxRetryCount is how many times a failed payload is retried
	// before it goes to the morgue (it is performed DefaultMaxRetryCount+1
	// times). A Worker's MaxRetryCount of 0 means this.
	DefaultMaxRetryCount = 25
	// NoRetries as a Worker's MaxRetryCount sends a payload to the morgue
	// at its first failure.
	NoRetries = -1
)

// Worker defines a queue and how its jobs are handled. The zero value of
// each knob means its default.
type Worker struct {
	// Queue names the queue: letters, digits, '_', '-' and '.'.
	Queue string
	// Shards is the number of shards the queue is created with
	// [DefaultShards]. The store refuses a different count for an existing
	// queue, until a reshard (docs/contract.md §3.17) changes it: from then
	// on the store's shards are served whatever this says.
	Shards int
	// BatchSize is the most ids per handler call [DefaultBatchSize], at
	// most persistence.MaxBatchSize.
	BatchSize int
	// Prefetch is how many ids a shard fetches per round trip to Redis
	// [max(BatchSize, DefaultPrefetch)], at least BatchSize. They are
	// handed to the handler BatchSize at a time, one call after the other
	// (or ConcurrentCalls at once), and acknowledged together; a window
	// holds each id once, so exclusivity and order are unaffected. Larger values cut round trips;
	// after a crash, up to Prefetch ids are delivered again. Prefetch equal
	// to BatchSize behaves exactly like Lowkiq (one round trip per call).
	Prefetch int
	// MaxPrefetch is the most ids a shard fetches per round trip while it
	// is busy [DefaultMaxPrefetch when Prefetch is not set either, else
	// Prefetch: a fixed window], between Prefetch and
	// persistence.MaxBatchSize; a shard caps it at MaxPayloadsPerCall. A shard's
	// window starts at Prefetch and doubles while its fetches come back
	// full and its calls are quick (a window's calls together under
	// 20 ms; when ConcurrentCalls runs all its calls at once, under 20 ms
	// for each Prefetch ids of it); it shrinks back when fetches come back short, when calls are
	// slow, and when another shard of the node waits for a permit
	// (MaxConcurrency). The calls of a longer window share the deadline
	// bound of a window of Prefetch ids, so a crash holds their ids no
	// longer than before; up to MaxPrefetch ids are delivered again.
	MaxPrefetch int
	// ConcurrentCalls is how many handler calls of one shard may run at
	// once [1: one call after the other, as Lowkiq's thread per shard],
	// between 1 and persistence.MaxBatchSize. The calls of a fetched
	// window hold distinct ids, so an id still has one call at a time and
	// its payloads keep their order; only calls of different ids of one
	// shard overlap. Raise it for handlers that mostly wait (a webhook
	// receiver, pull workers): a shard then has up to ConcurrentCalls
	// calls in flight instead of one. A window is settled once all its
	// calls returned, so a slow call holds up the shard's next window.
	// The node's Concurrency counts shards whatever this is, and
	// MaxConcurrency, which counts calls, needs it to be 1. The
	// configuration file's concurrent_calls means the same.
	ConcurrentCalls int
	// MaxRetryCount is how many times a failed payload is retried before
	// it goes to the morgue:
	//   - 0 means DefaultMaxRetryCount (25 retries, 26 attempts);
	//   - NoRetries (-1): no retry, the morgue at the first failure;
	//   - n > 0: n retries, n+1 attempts.
	// Other negative values are invalid. The configuration file's
	// max_retry_count means the same.
	MaxRetryCount int
	// RetryIn is the backoff policy [LowkiqRetry].
	RetryIn RetryPolicy
	// Timeout bounds one handler call [DefaultCallTimeout]: the call's
	// context has this deadline, and the call fails when it passes. The
	// store keeps the deadline with the in-flight record, so no other call
	// for the same ids starts before it, on any node. The ids of a call
	// that timed out are retried no earlier than its start plus twice
	// Timeout, whatever RetryIn says, so that work the handler left running
	// past its deadline (up to Timeout more) does not overlap their retry
	// (docs/contract.md §2.1). Zero means the default (before version 0.2
	// it meant no limit; every call now has one).
	Timeout time.Duration
	// MaxPayloadsPerCall is the most payloads of one id a handler call
	// receives, the lowest-scored ones; the rest stay queued in order and
	// come in later calls [DefaultMaxPayloadsPerCall], 1 to
	// MaxMaxPayloadsPerCall. The configuration file's max_payloads_per_call
	// means the same.
	MaxPayloadsPerCall int
	// State makes the queue stateful (docs/contract.md §11): each id owns
	// a durable state and version, handed to the handler with its payloads
	// (Job.State) and changed by it (Job.SetState, Job.DeleteState) in the
	// same atomic step as the id's acknowledgement. The configuration
	// file's state means the same.
	State bool
	// MaxStateBytes is the largest state of one id [DefaultMaxStateBytes];
	// a handler that sets a bigger one fails that id. The configuration
	// file's max_state_bytes means the same.
	MaxStateBytes int
	// FeedMaxLen bounds a stateful queue's change feed (docs/contract.md
	// §11): every committed state change (a handler's, an external
	// compare-and-set, a delete) is published on it, and about the latest
	// FeedMaxLen are kept [DefaultFeedMaxLen]; NoFeed publishes nothing.
	// The configuration file's feed_max_len means the same (0 there is
	// NoFeed). Store.ReadFeed, client.Feed and GET
	// /api/v1/queues/{q}/feed read it.
	FeedMaxLen int
	// DedupWindow, when positive, is the queue's deduplication window
	// (docs/contract.md §3.12): a job enqueued with a dedup key
	// (client.Job.DedupKey, "dedup_key" over HTTP) that was seen for its
	// id on the queue within the window is acknowledged as a duplicate and
	// not stored, also after the first one was processed [0: off, keys are
	// ignored]. Registering the queue records it in the store, where every
	// producer's enqueue reads it; nodes that disagree: the last
	// registration wins. The configuration file's dedup_window means the
	// same.
	DedupWindow time.Duration
	// MaxConcurrency, when positive, is the most handler calls of the
	// queue that run at once across the whole cluster, whatever each node's
	// Concurrency (docs/contract.md §9) [0: no limit]. Nodes share it
	// through permits in the store, renewed every LeaseTTL/3; a dead node's
	// come back within LeaseTTL. Every node serving the queue must set the
	// same value. The configuration file's max_concurrency means the same.
	MaxConcurrency int
	// Weight is the queue's share of each node's Concurrency under the
	// weighted scheduler, and its rank under the strict one
	// (Config.Scheduler), 1 to MaxWeight [1]; the other schedulers refuse
	// a Weight. It shares handler calls, not jobs, and only while shards of
	// several queues wait for the node's concurrency. The configuration
	// file's weight means the same.
	Weight int
	// RateLimit, when set, bounds how fast handler calls of the queue
	// start across the whole cluster (docs/contract.md §9): at most
	// PerSecond a second, in bursts of at most Burst. It counts calls, not
	// ids (a call holds up to BatchSize ids). The configuration file's
	// rate_limit means the same.
	RateLimit *RateLimit
	// RetainFinished, when positive, keeps a finished record of every id
	// the queue acknowledges for that long (docs/contract.md §3.14): when
	// it finished, how many calls it took, the error of its last failed
	// attempt and the result its handler set (Job.SetResult), at most
	// MaxFinished per shard (0: persistence.DefaultMaxFinished, 10,000;
	// the earliest finished go first). Each shard's owner deletes older
	// records about once a minute. Zero (the default) keeps none and costs
	// nothing. The configuration file's retain_finished and max_finished
	// mean the same.
	RetainFinished time.Duration
	MaxFinished    int
	// Handler processes batches. Required.
	Handler HandlerFunc
	// RetriesExhausted, if set, receives what went to the morgue, one job
	// per id with the payload that died (also the ids a handler declared
	// Dead, with all the payloads it was handed). It runs on the shard's
	// goroutine before the next batch; a panic in it is logged. It is
	// called at least once per dead job: its context ends when the node
	// loses the shard's lease or the drain deadline passes, and a hook that
	// returns after that is taken as not done (the node lets the lease
	// expire, and the next owner calls its hook with the same jobs).
	RetriesExhausted func(ctx context.Context, dead []Job)
}

// maxRetry returns the store's retry limit for the worker (0: none).
func (w *Worker) maxRetry() int {
	switch {
	case w.MaxRetryCount == 0:
		return DefaultMaxRetryCount
	case w.MaxRetryCount < 0:
		return 0
	}
	return w.MaxRetryCount
}

// spec is the worker's queue as the store registers it.
func (w *Worker) spec() persistence.QueueSpec {
	spec := persistence.QueueSpec{Name: w.Queue, Shards: w.Shards, DedupWindow: w.DedupWindow}
	if w.State {
		spec.Stateful, spec.FeedMaxLen = true, max(w.FeedMaxLen, 0) // NoFeed: 0
	}
	return spec
}

func (w *Worker) withDefaults() Worker {
	out := *w
	if out.Shards == 0 {
		out.Shards = DefaultShards
	}
	if out.BatchSize == 0 {
		out.BatchSize = DefaultBatchSize
	}
	if out.Prefetch == 0 {
		out.Prefetch = max(out.BatchSize, DefaultPrefetch)
		if out.MaxPrefetch == 0 {
			out.MaxPrefetch = max(out.Prefetch, DefaultMaxPrefetch)
		}
	}
	if out.MaxPrefetch == 0 {
		out.MaxPrefetch = out.Prefetch // a Prefetch chosen by hand stays fixed
	}
	if out.Timeout == 0 {
		out.Timeout = DefaultCallTimeout
	}
	if out.MaxPayloadsPerCall == 0 {
		out.MaxPayloadsPerCall = DefaultMaxPayloadsPerCall
	}
	if out.MaxStateBytes == 0 {
		out.MaxStateBytes = DefaultMaxStateBytes
	}
	if out.FeedMaxLen == 0 {
		out.FeedMaxLen = DefaultFeedMaxLen
	}
	if out.RetryIn == nil {
		out.RetryIn = LowkiqRetry()
	}
	return out
}

func (w *Worker) validate() error {
	if err := persistence.ValidateQueueName(w.Queue); err != nil {
		return fmt.Errorf("orderly: worker: %w", err)
	}
	if err := persistence.ValidateShards(w.Shards); err != nil {
		return fmt.Errorf("orderly: worker %s: %w", w.Queue, err)
	}
	if w.BatchSize < 1 || w.BatchSize > persistence.MaxBatchSize {
		return fmt.Errorf("orderly: worker %s: BatchSize must be between 1 and %d, got %d", w.Queue, persistence.MaxBatchSize, w.BatchSize)
	}
	if w.Prefetch < w.BatchSize || w.Prefetch > persistence.MaxBatchSize {
		return fmt.Errorf("orderly: worker %s: Prefetch must be between BatchSize (%d) and %d, got %d", w.Queue, w.BatchSize, persistence.MaxBatchSize, w.Prefetch)
	}
	if w.MaxPrefetch < w.Prefetch || w.MaxPrefetch > persistence.MaxBatchSize {
		return fmt.Errorf("orderly: worker %s: MaxPrefetch must be between Prefetch (%d) and %d, got %d", w.Queue, w.Prefetch, persistence.MaxBatchSize, w.MaxPrefetch)
	}
	if w.ConcurrentCalls < 0 || w.ConcurrentCalls > persistence.MaxBatchSize {
		return fmt.Errorf("orderly: worker %s: ConcurrentCalls must be between 1 and %d (0 for 1), got %d", w.Queue, persistence.MaxBatchSize, w.ConcurrentCalls)
	}
	if w.ConcurrentCalls > 1 && w.MaxConcurrency > 0 {
		return fmt.Errorf("orderly: worker %s: MaxConcurrency bounds calls, one per shard at a time: it needs ConcurrentCalls 1, got %d", w.Queue, w.ConcurrentCalls)
	}
	if w.MaxRetryCount < NoRetries {
		return fmt.Errorf("orderly: worker %s: MaxRetryCount must be >= 0 or NoRetries, got %d", w.Queue, w.MaxRetryCount)
	}
	if w.DedupWindow < 0 {
		return fmt.Errorf("orderly: worker %s: DedupWindow must not be negative, got %s", w.Queue, w.DedupWindow)
	}
	if w.Timeout < 0 {
		return fmt.Errorf("orderly: worker %s: Timeout must not be negative, got %s", w.Queue, w.Timeout)
	}
	if r := w.RateLimit; r != nil && (!(r.PerSecond > 0) || math.IsInf(r.PerSecond, 1) || r.Burst < 1) {
		return fmt.Errorf("orderly: worker %s: RateLimit needs PerSecond > 0 and Burst >= 1, got %v and %d", w.Queue, r.PerSecond, r.Burst)
	}
	if w.Weight < 0 || w.Weight > MaxWeight {
		return fmt.Errorf("orderly: worker %s: Weight must be between 1 and %d (0 for 1), got %d", w.Queue, MaxWeight, w.Weight)
	}
	if w.MaxConcurrency < 0 {
		return fmt.Errorf("orderly: worker %s: MaxConcurrency must be 0 (no limit) or positive, got %d", w.Queue, w.MaxConcurrency)
	}
	if w.MaxPayloadsPerCall < 1 || w.MaxPayloadsPerCall > MaxMaxPayloadsPerCall {
		return fmt.Errorf("orderly: worker %s: MaxPayloadsPerCall must be between 1 and %d (0 for the default, %d), got %d", w.Queue, MaxMaxPayloadsPerCall, DefaultMaxPayloadsPerCall, w.MaxPayloadsPerCall)
	}
	if w.FeedMaxLen < 1 && w.FeedMaxLen != NoFeed {
		return fmt.Errorf("orderly: worker %s: FeedMaxLen must be positive, NoFeed, or 0 for the default (%d), got %d", w.Queue, DefaultFeedMaxLen, w.FeedMaxLen)
	}
	if w.RetainFinished < 0 || w.MaxFinished < 0 {
		return fmt.Errorf("orderly: worker %s: RetainFinished and MaxFinished must not be negative, got %s and %d", w.Queue, w.RetainFinished, w.MaxFinished)
	}
	if w.MaxStateBytes < 1 {
		return fmt.Errorf("orderly: worker %s: MaxStateBytes must be positive (0 for the default, %d), got %d", w.Queue, DefaultMaxStateBytes, w.MaxStateBytes)
	}
	if w.Handler == nil {
		return fmt.Errorf("orderly: worker %s: a Handler is required", w.Queue)
	}
	return nil
}

// toJobs converts store jobs to handler jobs.
func toJobs(in []persistence.Job) []Job { return fillJobs(make([]Job, len(in)), nil, nil, in) }

// fillJobs converts in into out (of the same length), the payloads of every
// job in one slice: pay when it has room for them all, a new one otherwise;
// likewise the jobs' emit boxes in boxes.
// Each job's Payloads is capped at its length, so that appending to it does
// not write over the next job's.
func fillJobs(out []Job, pay []Payload, boxes []emitBox, in []persistence.Job) []Job {
	n := 0
	for _, j := range in {
		n += len(j.Payloads)
	}
	if cap(pay) < n {
		pay = make([]Payload, n)
	}
	pay = pay[:n]
	if len(boxes) < len(in) {
		boxes = make([]emitBox, len(in))
	}
	for i, j := range in {
		ps := pay[:len(j.Payloads):len(j.Payloads)]
		pay = pay[len(j.Payloads):]
		if ps == nil {
			ps = []Payload{} // as before: never nil
		}
		for k, p := range j.Payloads {
			ps[k] = Payload{Data: p.Data, Score: p.Score, Headers: p.Headers, ExpiresAt: p.ExpiresAt}
		}
		out[i] = Job{ID: j.ID, Payloads: ps, RetryCount: j.RetryCount, PerformAt: j.PerformAt, Error: j.Error,
			st: newEntityState(j.State, j.Timer), em: &boxes[i]}
	}
	return out
}

// handed is the Batch of a handler call with room for one job and one
// payload: a call of a single id (batch size 1) costs one allocation.
type handed struct {
	b Batch
	j [1]Job
	p [1]Payload
	e [1]emitBox
}

// newBatch returns the Batch a handler call receives for b.
func newBatch(b *persistence.Batch) *Batch {
	if len(b.Jobs) == 1 && len(b.Jobs[0].Payloads) <= 1 {
		h := &handed{b: Batch{Queue: b.Queue, Shard: b.Shard, Delivery: delivery(b)}}
		h.b.Jobs = fillJobs(h.j[:], h.p[:], h.e[:], b.Jobs)
		return &h.b
	}
	return &Batch{Queue: b.Queue, Shard: b.Shard, Delivery: delivery(b), Jobs: toJobs(b.Jobs)}
}

// RateLimit is a queue's cluster-wide rate limit: a token bucket in the
// store that refills at PerSecond tokens a second up to Burst; each handler
// call takes one token before it starts.
type RateLimit struct {
	// PerSecond is the sustained rate of calls, > 0 (0.5 is one call
	// every two seconds).
	PerSecond float64
	// Burst is the most calls that may start at once after a quiet
	// period, >= 1.
	Burst int
}
