package persistence

import (
	"cmp"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits and defaults of the data model.
const (
	// MaxIDBytes is the longest job id accepted, in bytes.
	MaxIDBytes = 512
	// DefaultMaxPayloadBytes is the default limit on one payload's stored size.
	DefaultMaxPayloadBytes = 1 << 20
	// MaxQueueNameBytes is the longest queue name accepted.
	MaxQueueNameBytes = 128
	// MaxShards is the largest shard count a queue may have.
	MaxShards = 4096
	// MaxBatchSize is the largest number of ids one fetch may return.
	MaxBatchSize = 1000
	// DefaultMaxPayloadsPerCall is how many payloads of one id a fetch
	// hands over at most when AdvanceRequest.MaxPayloads is 0
	// (docs/contract.md §2.6): the lowest-scored ones; the rest stay
	// queued, in order.
	DefaultMaxPayloadsPerCall = 1000
	// FreshRetryCount is the retry count of a job that never failed.
	FreshRetryCount = -1
	// MaxHeaders is the most headers one payload may carry
	// (docs/contract.md §10).
	MaxHeaders = 32
	// MaxHeaderBytes is the most bytes of keys and values one payload's
	// headers may hold (docs/contract.md §10).
	MaxHeaderBytes = 8 << 10
	// MaxDedupKeyBytes is the longest dedup key accepted, in bytes
	// (docs/contract.md §3.12).
	MaxDedupKeyBytes = 512
	// DefaultPriority is the priority of a job that names none (0): the
	// most urgent (docs/contract.md §3.16).
	DefaultPriority = 1
	// MaxPriority is the least urgent priority.
	MaxPriority = 4
)

// ShardOf returns the shard of id in a queue of the given number of shards:
// CRC-32 (IEEE) of the id's bytes modulo shards, as Lowkiq does.
func ShardOf(id string, shards int) int {
	return int(crc32.ChecksumIEEE([]byte(id)) % uint32(shards))
}

// ShardRef names one shard of one queue.
type ShardRef struct {
	Queue string
	Shard int
}

// String returns "<queue>/<shard>", the spelling of a shard in logs, errors
// and actor names.
func (r ShardRef) String() string { return r.Queue + "/" + strconv.Itoa(r.Shard) }

// Compare orders shard refs by queue name, then by shard number; it returns
// -1, 0 or +1 as r sorts before, with or after o (for slices.SortFunc).
func (r ShardRef) Compare(o ShardRef) int {
	if c := strings.Compare(r.Queue, o.Queue); c != 0 {
		return c
	}
	return cmp.Compare(r.Shard, o.Shard)
}

// ShardOwner tells who holds a shard's lease: Owner is empty when nobody
// does; Epoch is the epoch of the last acquisition (epochs only grow).
type ShardOwner struct {
	Shard int
	Owner string
	Epoch int64
}

// QueueSpec is what the store keeps about a queue: its name, its fixed
// shard count and, for a stateful queue, the bound of its change feed.
type QueueSpec struct {
	Name   string
	Shards int
	// Stateful, when set, records FeedMaxLen as the queue's change feed
	// bound (the last registration wins), which outside compare-and-set
	// writes use to publish their changes (docs/contract.md §11). Unset,
	// the recorded bound is left as it is.
	Stateful bool
	// FeedMaxLen is the bound of a stateful queue's change feed; 0: no
	// feed.
	FeedMaxLen int
	// DedupWindow is the queue's deduplication window (docs/contract.md
	// §3.12): an enqueued job whose DedupKey was seen on the queue within
	// it is a duplicate and is not stored. 0 turns it off. Every
	// registration records it in each shard (the last registration wins).
	DedupWindow time.Duration
}

// NewJob is one job handed to Enqueue.
type NewJob struct {
	// ID names the job; jobs of one id merge and are never processed
	// concurrently. Non-empty valid UTF-8, at most MaxIDBytes bytes.
	ID string
	// Payload is stored as opaque bytes; nil means the empty payload.
	Payload []byte
	// Score orders an id's payloads (ascending). Nil means now, in unix
	// seconds.
	Score *float64
	// PerformAt is when the job becomes due, between 1970 and
	// MaxTimeSeconds; the zero time means now. Transports that take
	// perform_at or perform_in compute it with the PerformAt function.
	PerformAt time.Time
	// Headers are string metadata carried with the payload: at most
	// MaxHeaders entries and MaxHeaderBytes of keys and values, no empty
	// key; nil or empty means none (docs/contract.md §10).
	Headers map[string]string
	// DedupKey, when the queue has a dedup window, makes the job a
	// duplicate (acknowledged, not stored) if a job with the same key was
	// enqueued on the queue within the window (docs/contract.md §3.12).
	// Empty means none; at most MaxDedupKeyBytes bytes of valid UTF-8. A
	// queue without a window ignores it.
	DedupKey string
	// ExpiresAt, when set, is when the payload expires (docs/contract.md
	// §3.15): not handed to a handler by then, it is discarded at fetch
	// and counted (QueueStats.Expired). The zero time means never; a time
	// already past is accepted (the payload expires at its first fetch).
	// Transports that take expires_at or expires_in compute it with the
	// ExpiresAt function.
	ExpiresAt time.Time
	// Priority orders the due ids of a shard (docs/contract.md §3.16):
	// 1 (first) to MaxPriority; 0 means DefaultPriority. An id takes the
	// most urgent priority of the payloads merged into it since it was
	// last fetched; its payloads stay in score order whatever theirs.
	Priority int
}

// EnqueueResult is what an enqueue reports besides its success.
type EnqueueResult struct {
	// Duplicates counts the jobs acknowledged but not stored because
	// their dedup key was seen within the queue's window
	// (docs/contract.md §3.12).
	Duplicates int
	// Spooled counts the jobs a client kept in its local spool because
	// the store could not take them (client.SpoolConfig, docs/contract.md
	// §6.7); a store never sets it.
	Spooled int
}

// Payload is one payload of a job with its score and headers.
type Payload struct {
	Data  []byte
	Score float64
	// Headers are the payload's metadata (docs/contract.md §10); nil when
	// it has none. An equal payload enqueued again keeps the headers of
	// the lower score.
	Headers map[string]string
	// ExpiresAt is when the payload expires (docs/contract.md §3.15); the
	// zero time when it does not. Like its headers, an equal payload
	// enqueued again keeps the expiry of the lower score.
	ExpiresAt time.Time
}

// Expired is what a shard owner found expired in a fetched batch
// (docs/contract.md §3.15): the id and the positions, in the fetched
// Job.Payloads, of its payloads whose ExpiresAt was not after the batch's
// FetchedAt. The settle removes them, whatever the id's outcome, and
// counts them (QueueStats.Expired). An id all of whose payloads expired
// (and that no timer brought) was not handed to a handler: it is neither
// processed nor failed.
type Expired struct {
	ID       string
	Payloads []int
}

// ExpiredIn returns the payloads of job that expired at fetchedAt: their
// positions in job.Payloads, nil when none did.
func ExpiredIn(job Job, fetchedAt time.Time) []int {
	var out []int
	for i, p := range job.Payloads {
		if !p.ExpiresAt.IsZero() && !p.ExpiresAt.After(fetchedAt) {
			out = append(out, i)
		}
	}
	return out
}

// Job is a job as stored: queued, in flight, or (with UpdatedAt) in the morgue.
type Job struct {
	ID string
	// Payloads in ascending score order (ties in byte order). Listings may
	// return only the first few; PayloadCount is the total.
	Payloads     []Payload
	PayloadCount int
	// PerformAt is when the job is (or was) due.
	PerformAt time.Time
	// RetryCount is -1 for a job that never failed, 0 after the first
	// failure, and so on.
	RetryCount int
	// Error is the last failure's message; empty when RetryCount is -1.
	Error string
	// State is the id's state when it was fetched from a stateful queue
	// (AdvanceRequest.Stateful); nil otherwise (docs/contract.md §11).
	State *State
	// Timer is set when the id's timer fired and brought it (stateful
	// queues); a job that only its timer brought has no payloads.
	Timer bool
	// Priority is the id's priority (docs/contract.md §3.16), 2 to
	// MaxPriority; 0 means DefaultPriority (1), as stored by every record
	// that never named one.
	Priority int
}

// MorgueEntry is an id in the morgue: the payloads whose retries ran out,
// merged per id (for an equal payload the lower score wins).
type MorgueEntry struct {
	ID           string
	Payloads     []Payload
	PayloadCount int
	// UpdatedAt is when a payload of the id last died (its last failure).
	UpdatedAt time.Time
	// FirstAt is when the entry was created: its first payload died. It
	// is the zero time for an entry written by a release before it was
	// kept (docs/storage.md §5).
	FirstAt time.Time
	Error   string
}

// Lease is a shard owner's right to change the shard's state. Token is the
// fencing token every state-changing call presents: opaque, never issued
// twice. Epoch is strictly greater than the epoch of every earlier
// acquisition of the shard, also after the store lost recent writes
// (docs/contract.md §2.5); it is not a count.
type Lease struct {
	ShardRef
	Owner string
	Epoch int64
	Token string
}

// Batch is what one fetch handed to a shard owner: up to batch_size distinct
// ids of one shard, due ones only, earliest perform_at first.
type Batch struct {
	ShardRef
	// Seq identifies the batch among the lease holder's batches; it is the
	// value the owner passes to Advance as Settle.
	Seq       int64
	Token     string
	FetchedAt time.Time
	Jobs      []Job
	// StateWrites are set by the handler call that processed the batch, on
	// a stateful queue: the state changes of its ids, for the settle
	// (AdvanceRequest.StateWrites).
	StateWrites []StateWrite
	// TimerWrites are the timer changes of the call, like StateWrites.
	TimerWrites []TimerWrite
	// Emits are the jobs the call emitted, like StateWrites.
	Emits []Emit
	// Snoozes, Deaths and Discards are the outcomes the call chose for
	// its ids (docs/contract.md §3.11), for the settle
	// (AdvanceRequest.Snoozes, Deaths, Discards); set like StateWrites.
	Snoozes  []Snooze
	Deaths   []Death
	Discards []Discard
	// Results are the results the call set for its succeeded ids, for a
	// queue with retain_finished (AdvanceRequest.Results).
	Results map[string][]byte
}

// Failure reports one failed id of a settled batch.
type Failure struct {
	ID    string
	Error string
	// RetryAt is when the job becomes due again if it keeps retries left.
	RetryAt time.Time
	// Hold, when set, keeps the id from being handed over again before
	// it, whatever else the settlement does: also when its retries are
	// exhausted (what is left of it, and what was queued for it meanwhile,
	// would be due at once) and against "perform now". Its perform_at is
	// not changed by it. The node sets it for the ids of a call that timed
	// out, whose handler's work may go on past the deadline
	// (docs/contract.md §2.1).
	Hold time.Time
}

// Snooze reports an id of a settled batch that its handler put off
// (docs/contract.md §3.11): its payloads go back to the queue due at
// RetryAt, with their retry count and last error unchanged; neither
// processed nor failed.
type Snooze struct {
	ID      string
	RetryAt time.Time
}

// Death reports an id of a settled batch that its handler declared dead
// (docs/contract.md §3.14): the payloads it was handed go to the morgue at
// once with Reason as their error, whatever retries were left, and are
// reported in AdvanceResult.Dead.
type Death struct {
	ID     string
	Reason string
}

// Discard reports an id of a settled batch whose payloads its handler
// dropped (docs/contract.md §3.11): the payloads it was handed are removed
// and counted (QueueStats.Discarded), never delivered again.
type Discard struct {
	ID     string
	Reason string
}

// AdvanceRequest settles the caller's in-flight batch and fetches the next.
type AdvanceRequest struct {
	// Settle is the Seq of the batch being settled, 0 when none. Every id
	// of that batch not named in Failures, Snoozes, Deaths, Discards,
	// Skipped or Interrupted succeeded.
	Settle   int64
	Failures []Failure
	// Snoozes, Deaths and Discards are the outcomes the handler chose for
	// ids of the settled batch (docs/contract.md §3.11); an id is named in
	// at most one of them and not in Failures. Nothing else of the call
	// (state writes, timer writes, emits) commits for those ids; a timer
	// that brought a snoozed id fires again at its RetryAt, one that
	// brought a dead or discarded id is dropped.
	Snoozes  []Snooze
	Deaths   []Death
	Discards []Discard
	// Expired are the payloads of the settled batch that expired before
	// the fetch (docs/contract.md §3.15): removed and counted in the
	// settle, whatever their ids' outcomes.
	Expired []Expired
	// Skipped are ids of the settled batch that were not handled (a stop
	// cut the batch short): they go back to the queue as they were, with
	// their retry count, perform_at and error, and count neither as
	// processed nor as failed.
	Skipped []string
	// Fetch is the most ids to fetch; 0 settles only.
	Fetch int
	// NextSeq is the Seq the fetched batch gets; it must differ from Settle.
	// When an earlier Advance with the same NextSeq already ran (its answer
	// was lost), the batch it fetched is returned again and nothing else
	// changes, so retrying an Advance is safe.
	NextSeq int64
	// MaxRetryCount is the queue's max_retry_count: a failed id whose retry
	// count reaches it sends its lowest-scored payload to the morgue.
	MaxRetryCount int
	// MaxPayloads is the queue's max_payloads_per_call: the most payloads
	// of one id the fetched batch holds (the lowest-scored; the rest stay
	// queued in order). 0 means DefaultMaxPayloadsPerCall.
	MaxPayloads int
	// CallTimeout, when positive, is the longest one handler call of the
	// fetched batch may run (its deadline is its start plus CallTimeout),
	// and CallSize how many ids one call takes (0: the whole batch in one
	// call). The store keeps a bound on the calls' deadlines with the
	// in-flight record: if the record is restored (the owner crashed or
	// released the shard), its ids are not fetched again before that bound.
	// The caller must keep the deadline of its i-th call within i x
	// CallTimeout of the time it sent this request. Zero keeps no deadline.
	CallTimeout time.Duration
	CallSize    int
	// MaxCalls, when positive, caps the calls the deadline bound counts:
	// the bound is MaxCalls x CallTimeout after the fetch however many
	// calls the window makes. The caller must then keep the deadline of
	// its i-th call within min(i, MaxCalls) x CallTimeout of the time it
	// sent this request (a long window is bounded by time as well as by
	// ids). 0 counts every call.
	MaxCalls int
	// Interrupted are ids of the settled batch whose call was cancelled
	// while it ran (a receiver may still be at work on them): they go back
	// as Skipped ones do, and are not fetched again before their call's
	// deadline bound.
	Interrupted []string
	// Stateful makes the fetch hand each id's state and version with its
	// payloads (Job.State) and keep the version in the in-flight record,
	// and the settle check it (docs/contract.md §11): a succeeded id whose
	// state changed since (an external SetState) is not acknowledged but
	// goes back to the queue as it was, and is listed in
	// AdvanceResult.Conflicts.
	Stateful bool
	// StateWrites are the handler's state changes for ids of the settled
	// batch, committed only for the ids that succeeded and did not
	// conflict (at most one per id: the last one counts). Each is at most
	// MaxStateBytes (0: DefaultMaxStateBytes), or the Advance fails with a
	// *FieldError and changes nothing.
	StateWrites   []StateWrite
	MaxStateBytes int
	// TimerWrites set or clear the timers of ids of the settled batch,
	// committed like StateWrites (stateful queues only).
	TimerWrites []TimerWrite
	// Emits are jobs emitted by the handler for ids of the settled batch
	// (any queue, stateful or not), committed into the shard's outbox with
	// the acknowledgement of their From id only (at most MaxEmitsPerID per
	// id); each must pass ValidateEmit, or the Advance fails with a
	// *FieldError and changes nothing.
	Emits []Emit
	// CheckOutbox makes the result report the outbox's length
	// (AdvanceResult.Outbox) whatever the call carries: the owner's first
	// Advance after acquiring sets it, to relay what a previous owner
	// committed and did not relay.
	CheckOutbox bool
	// FeedMaxLen, on a stateful queue, publishes each committed state
	// change on the queue's change feed, kept to about that many entries
	// (through the outbox, relayed like emits); 0 publishes nothing.
	FeedMaxLen int
	// ConflictDelay is how long an id of the settled batch that conflicts
	// (Stateful: its state changed from outside while it was in flight)
	// waits before it is fetched again; ConflictDelays sets it per id,
	// overriding it. Its perform_at, retry count and error stay as they
	// were. Zero (and an id absent from both): fetched again at once,
	// possibly by this very call. The node grows the delay with the
	// consecutive conflicts of an id, so that a busy outside writer does
	// not drive its handler in a tight loop (docs/contract.md §11).
	ConflictDelay  time.Duration
	ConflictDelays map[string]time.Duration
	// RetainFinished is the queue's retain_finished: when positive, each
	// id the settle acknowledges leaves a finished record (FinishedJob)
	// that the shard keeps that long (the owner trims older ones,
	// FinishedStore.TrimFinished) and at most MaxFinished of (0:
	// DefaultMaxFinished; the earliest finished go first). Zero keeps
	// none and costs nothing (docs/contract.md §3.14).
	RetainFinished time.Duration
	MaxFinished    int
	// Results are the results the handler set, by id, kept in the
	// finished records of the ids acknowledged (only with
	// RetainFinished); each at most MaxResultBytes, or the Advance fails
	// with a *FieldError and changes nothing.
	Results map[string][]byte
}

// AdvanceResult is the outcome of an Advance.
type AdvanceResult struct {
	// Batch is the fetched batch; nil when nothing is due.
	Batch *Batch
	// More reports that the fetch was cut at the requested size, so more
	// jobs may be due.
	More bool
	// NextDue is the perform_at of the earliest queued job not yet due,
	// when the fetch met one; the zero time otherwise.
	NextDue time.Time
	// Dead is what the settlement moved to the morgue, one entry per id
	// with the payload that died. An Advance retried after a lost reply
	// returns the same Dead again.
	Dead []Job
	// Processed and Failed count the settled ids.
	Processed, Failed int
	// Snoozed and Discarded count the settled ids that were snoozed and
	// discarded (the dead ones are in Dead). Like Processed and Failed, a
	// retried Advance whose first reply was lost may report 0.
	Snoozed, Discarded int
	// Expired counts the payloads the settle removed because they expired
	// (AdvanceRequest.Expired); a retried Advance may report 0.
	Expired int
	// Restored counts ids of an in-flight record the caller did not own (or
	// no longer knew about) that went back into the queue.
	Restored int
	// Conflicts are ids of the settled batch whose state changed while they
	// were in flight: they went back to the queue as they were (neither
	// processed nor failed; their retry count is unchanged), and nothing of
	// their call was committed (docs/contract.md §11).
	Conflicts []string
	// Outbox is how many entries wait in the shard's outbox after the
	// call, reported when the call carried emits, set CheckOutbox or the
	// queue is stateful (0 otherwise, without looking): the owner relays them
	// (OutboxStore.RelayOutbox).
	Outbox int
	// Draining reports that a reshard drains the shard (docs/contract.md
	// §3.17): the call settled what the caller held and fetched nothing.
	// The owner moves the shard's ids with Resharder.DrainShard instead,
	// and relays its outbox.
	Draining bool
	// Moved reports that a reshard drained the shard: it holds nothing,
	// fetches nothing and takes no enqueue.
	Moved bool
}

// Order selects the sort order of a listing.
type Order string

// Listing orders. Queue listings accept OrderID, OrderPerformAt and
// OrderRetryCount; morgue listings OrderID and OrderUpdatedAt.
const (
	OrderID         Order = "id"
	OrderPerformAt  Order = "perform_at"
	OrderRetryCount Order = "retry_count"
	OrderUpdatedAt  Order = "updated_at"
)

// Listing limits.
const (
	// DefaultListLimit is the page size when ListOptions.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit is the largest page size.
	MaxListLimit = 1000
	// DefaultListPayloads is how many payloads of each job a listing shows
	// when ListOptions.Payloads is 0.
	DefaultListPayloads = 10
	// MaxLookupPayloads is how many payloads a one-job lookup returns at most.
	MaxLookupPayloads = 1000
)

// ListOptions selects a page of a listing. Min and Max bound the sort key,
// inclusive: numbers (unix seconds or retry counts) for the numeric orders,
// ids for OrderID; empty means unbounded. Cursor continues after the last
// entry of a previous page (its Next); it must come from the same order and
// direction.
type ListOptions struct {
	Order    Order
	Min, Max string
	Rev      bool
	Limit    int
	Cursor   string
	Payloads int
}

// JobPage is one page of a queue listing.
type JobPage struct {
	Jobs []Job
	// Next continues the listing; empty when this page is the last.
	Next string
}

// MorguePage is one page of a morgue listing.
type MorguePage struct {
	Entries []MorgueEntry
	Next    string
}

// JobInfo is what a one-job lookup finds: the queued entry, the in-flight
// record, or both (new payloads arrived while the id was in flight), and
// the morgue entry, with the id's state and timer.
type JobInfo struct {
	Queue    string
	Shard    int
	Queued   *Job
	InFlight *InFlightJob
	// State is the id's state in a stateful queue, nil when it never had
	// one; a deleted state is a tombstone (Deleted, with its version). A
	// lookup finds an id that has state, or a tombstone, but no job
	// (deleting a job keeps its state).
	State *State
	// Timer is when the id's timer fires; zero when it has none.
	Timer time.Time
	// Morgue is the id's morgue entry, nil when it has none; a lookup
	// finds an id that is only in the morgue (docs/contract.md §3.9).
	Morgue *MorgueEntry
	// Finished is the id's finished record on a queue with
	// retain_finished, nil when it has none (docs/contract.md §3.14).
	Finished *FinishedJob
}

// InFlightJob is one job of an in-flight batch.
type InFlightJob struct {
	Job
	Owner     string
	Epoch     int64
	Seq       int64
	FetchedAt time.Time
	// Deadline bounds the deadlines of the batch's handler calls (zero when
	// the owner keeps none).
	Deadline time.Time
}

// InFlightBatch is the in-flight record of one shard.
type InFlightBatch struct {
	Shard     int
	Owner     string
	Epoch     int64
	Seq       int64
	FetchedAt time.Time
	// Deadline bounds the deadlines of the batch's handler calls (zero when
	// the owner keeps none).
	Deadline time.Time
	Jobs     []Job
}

// QueueStats are the metrics of one queue (docs/contract.md §3.10).
type QueueStats struct {
	Name   string
	Shards int
	// Length counts queued ids (not those in flight); Fresh those with
	// retry count -1, Retries the others.
	Length, Fresh, Retries int64
	// MorgueLength counts ids in the morgue.
	MorgueLength int64
	// Lag is the seconds since the earliest perform_at among queued ids,
	// 0 when none is due.
	Lag float64
	// Busy counts ids in flight.
	Busy int64
	// Processed and Failed count settled ids since the queue was created.
	Processed, Failed int64
	// Snoozed and Discarded count the ids whose handler snoozed or
	// discarded them (docs/contract.md §3.11) since the queue was created;
	// 0 for data written before they existed.
	Snoozed, Discarded int64
	// Expired counts the payloads discarded at fetch because they expired
	// (docs/contract.md §3.15) since the queue was created.
	Expired int64
	// Cancelled counts the ids a cancel disposed of while a call held them
	// (docs/contract.md §3.13); queued payloads a cancel killed or deleted
	// are not counted here.
	Cancelled int64
	// OldestDue is the earliest perform_at among queued ids (zero if none).
	OldestDue time.Time
	// FirstShard is the number of the queue's lowest shard: 0 until a
	// reshard (docs/contract.md §3.17) moved the queue to other numbers.
	FirstShard int
	// ShardLag is Lag per shard, indexed by shard number minus FirstShard (nil from a store
	// that does not report it).
	ShardLag []float64
	// Paused tells that the queue is paused (docs/contract.md §9).
	Paused bool
}

// UnixSeconds converts t to float unix seconds, the unit of scores and times
// in the store.
func UnixSeconds(t time.Time) float64 {
	// Seconds and the fraction separately: UnixNano()/1e9 rounds
	// 1700000123.25 to 1700000123.2499998 (and overflows after 2262).
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// FromUnixSeconds converts float unix seconds to a time.
func FromUnixSeconds(s float64) time.Time {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9)))
}

// Finished ids (docs/contract.md §3.14).
const (
	// DefaultMaxFinished is how many finished records one shard keeps at
	// most when AdvanceRequest.MaxFinished is 0.
	DefaultMaxFinished = 10000
	// MaxResultBytes is the largest result a handler may set for an id.
	MaxResultBytes = 64 << 10
	// MaxAttemptHistory is how many failed attempts of an id its finished
	// record keeps (FinishedJob.Errors), the last ones.
	MaxAttemptHistory = 5
	// OrderFinishedAt orders a listing of finished ids by finished_at.
	OrderFinishedAt Order = "finished_at"
)

// FinishedJob is the record an acknowledged id leaves on a queue with
// retain_finished (docs/contract.md §3.14).
type FinishedJob struct {
	ID string
	// FinishedAt is when the settle acknowledged it.
	FinishedAt time.Time
	// Attempts is how many handler calls it took: 1 when the first
	// succeeded (its retry count + 2).
	Attempts int
	// Error is the error of its last failed attempt; empty when none
	// failed.
	Error string
	// Errors are its last failed attempts (at most MaxAttemptHistory,
	// oldest first) that failed while the queue retained finished ids;
	// nil when none did.
	Errors []AttemptError
	// Result is what the handler set for it (Job.SetResult, the webhook
	// answer's "result"); nil when it set none.
	Result []byte
}

// AttemptError is one failed attempt of a finished id.
type AttemptError struct {
	At    time.Time
	Error string
}

// FinishedPage is one page of a listing of finished ids.
type FinishedPage struct {
	Jobs []FinishedJob
	Next string
}

// CheckResultSize checks a result against MaxResultBytes.
func CheckResultSize(id string, b []byte) error {
	if len(b) > MaxResultBytes {
		return &FieldError{Field: "result", Index: -1,
			Reason: fmt.Sprintf("the result of %q is %d bytes, more than %d", id, len(b), MaxResultBytes)}
	}
	return nil
}
