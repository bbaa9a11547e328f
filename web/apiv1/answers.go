package apiv1

import (
	"encoding/base64"
	"encoding/json"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// Error is every error answer: the message, and the field at fault
// ("jobs[2].perform_at", "limit", "queue") when one is.
type Error struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// Enqueued is the answer of POST /api/v1/queues/{q}/jobs. Enqueued counts
// the jobs of the request, Duplicates those of them that were
// acknowledged as duplicates under the queue's dedup window and not stored
// (docs/contract.md §3.12).
type Enqueued struct {
	Enqueued   int `json:"enqueued"`
	Duplicates int `json:"duplicates"`
}

// Queue is a queue and its metrics, GET /api/v1/queues/{q} (and each queue
// of GET /api/v1/queues).
type Queue struct {
	Name   string `json:"name"`
	Shards int    `json:"shards"`
	// Length counts queued ids (not those in flight, which Busy counts);
	// Fresh those that never failed, Retries the others.
	Length       int64 `json:"length"`
	Fresh        int64 `json:"fresh"`
	Retries      int64 `json:"retries"`
	MorgueLength int64 `json:"morgue_length"`
	// Lag is the seconds since the earliest perform_at among queued ids,
	// 0 when none is due.
	Lag  float64 `json:"lag"`
	Busy int64   `json:"busy"`
	// Processed and Failed count settled ids since the queue was created.
	Processed int64 `json:"processed"`
	Failed    int64 `json:"failed"`
	// Snoozed and Discarded count the ids whose handler snoozed or
	// discarded them (docs/contract.md §3.11) since the queue was created.
	Snoozed   int64 `json:"snoozed"`
	Discarded int64 `json:"discarded"`
	// Cancelled counts the ids a cancel disposed of while a call held them
	// (docs/contract.md §3.13); absent while 0.
	Cancelled int64 `json:"cancelled,omitempty"`
	// Expired counts the payloads discarded at fetch because they expired
	// (docs/contract.md §3.15) since the queue was created; absent while 0.
	Expired int64 `json:"expired,omitempty"`
	// OldestDue is the earliest perform_at among queued ids; null when
	// nothing is queued.
	OldestDue *float64 `json:"oldest_due"`
	// Paused tells that no node starts a handler call of the queue
	// (docs/contract.md §9).
	Paused bool `json:"paused"`
	// MaxConcurrency is the queue's max_concurrency (docs/contract.md §9)
	// as the answering node is configured; absent when that node sets no
	// limit or does not know the queue.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// RateLimit is the queue's rate_limit (docs/contract.md §9) as the
	// answering node is configured; absent when that node sets none.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Pull is what the answering node's pull workers do on a pull queue
	// (docs/contract.md §6.6); absent on other queues.
	Pull *PullQueue `json:"pull,omitempty"`
	// Reshard is the progress of the queue's reshard (docs/contract.md
	// §3.17); absent when none runs. Shards is then its target count, the
	// one new ids use.
	Reshard *Reshard `json:"reshard,omitempty"`
}

// Reshard is how far a queue's reshard got: the answer of POST
// /api/v1/queues/{q}/reshard, and GET /api/v1/queues' "reshard".
type Reshard struct {
	// From and To are the shard counts the queue moves from and to.
	From int `json:"from"`
	To   int `json:"to"`
	// Moved counts the ids whose queued jobs left the drained shards so
	// far; Left the ids still queued in them.
	Moved int64 `json:"moved"`
	Left  int64 `json:"left"`
	// DrainedShards counts the drained shards (of From) that are empty.
	DrainedShards int `json:"drained_shards"`
}

// RateLimit is a queue's rate_limit: handler calls start at most PerSecond
// a second across the cluster, in bursts of at most Burst.
type RateLimit struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// QueueLimits are the limits of a queue a node is configured with, which
// GET /api/v1/queues shows (web.Config.QueueLimits).
type QueueLimits struct {
	// MaxConcurrency is max_concurrency, 0 for none.
	MaxConcurrency int
	// RateLimit is rate_limit, nil for none.
	RateLimit *RateLimit
}

// Periodic is a periodic job (docs/contract.md §9). LastTick is null until
// the job first ticked; times are unix seconds.
type Periodic struct {
	Name     string   `json:"name"`
	Queue    string   `json:"queue"`
	Schedule string   `json:"schedule"`
	ID       string   `json:"id"`
	LastTick *float64 `json:"last_tick"`
	NextTick *float64 `json:"next_tick"`
}

// PeriodicJobs is the answer of GET /api/v1/periodic.
type PeriodicJobs struct {
	Periodic []Periodic `json:"periodic"`
}

// Cancelled is the answer of POST /api/v1/queues/{q}/jobs/{id}/actions/cancel
// (docs/contract.md §3.13): the mode, the queued payloads moved to the
// morgue (kill) or dropped (delete), and whether a handler call held the id
// (its node was told to cancel it; its payloads follow the mode unless the
// call succeeded).
type Cancelled struct {
	Mode     string `json:"mode"`
	Killed   int    `json:"killed"`
	Deleted  int    `json:"deleted"`
	InFlight bool   `json:"in_flight"`
}

// Paused is the answer of POST /api/v1/queues/{q}/pause and /resume.
type Paused struct {
	Paused bool `json:"paused"`
}

// Queues is the answer of GET /api/v1/queues, by name.
type Queues struct {
	Queues []Queue `json:"queues"`
}

// StatsCounts are one queue's (or the total's) metrics in Lowkiq's stats
// shape.
type StatsCounts struct {
	Length       int64   `json:"length"`
	MorgueLength int64   `json:"morgue_length"`
	Lag          float64 `json:"lag"`
	// Paused is set in by_worker for a paused queue (absent otherwise,
	// and in the total).
	Paused bool `json:"paused,omitempty"`
}

// Stats is the answer of GET /api/v1/stats, Lowkiq's shape. ByWorker is
// keyed by queue name; the total lag is the maximum, the other totals sums.
type Stats struct {
	Total    StatsCounts            `json:"total"`
	ByWorker map[string]StatsCounts `json:"by_worker"`
}

// Job is a queued job, or an id's entry of an in-flight batch.
type Job struct {
	PerformAt  float64 `json:"perform_at"`
	RetryCount int     `json:"retry_count"`
	Error      string  `json:"error"`
	// Payloads are the lowest-scored ones (ListOptions.Payloads);
	// PayloadCount is the total.
	Payloads     []wire.Payload `json:"payloads"`
	PayloadCount int            `json:"payload_count"`
	// Priority is the id's priority (docs/contract.md §3.16), omitted
	// when it is 1.
	Priority int `json:"priority,omitempty"`
}

// ListedJob is a job of a listing or of an in-flight batch.
type ListedJob struct {
	ID string `json:"id"`
	Job
}

// JobPage is the answer of GET /api/v1/queues/{q}/jobs. Next is the cursor
// of the following page, empty on the last.
type JobPage struct {
	Jobs []ListedJob `json:"jobs"`
	Next string      `json:"next"`
	// Scanned is how many queued jobs an error search (error=) read; absent
	// from other listings.
	Scanned *int `json:"scanned,omitempty"`
}

// InFlightJob is an id's entry of its shard's in-flight batch, with the
// owner that fetched it.
type InFlightJob struct {
	Job
	Owner     string  `json:"owner"`
	Epoch     int64   `json:"epoch"`
	Seq       int64   `json:"seq"`
	FetchedAt float64 `json:"fetched_at"`
}

// JobLookup is the answer of GET /api/v1/queues/{q}/jobs/{id}: the queued
// entry and, when the id is in flight (InFlight), its in-flight entry;
// either is null when absent.
type JobLookup struct {
	Queue      string       `json:"queue"`
	Shard      int          `json:"shard"`
	ID         string       `json:"id"`
	InFlight   bool         `json:"in_flight"`
	Queued     *Job         `json:"queued"`
	Processing *InFlightJob `json:"processing"`
	// State is the id's state on a stateful queue (omitted when it never
	// had one); it outlives the job. A deleted state shows as its
	// tombstone, {"state": null, "version": n, "deleted": true}, also when
	// it is all that is left of the id.
	State *State `json:"state,omitempty"`
	// Timer is when the id's timer fires (unix seconds), if it has one.
	Timer *float64 `json:"timer,omitempty"`
	// Morgue is the id's morgue entry, omitted when it has none; an id
	// that is only in the morgue is found (not 404) with queued and
	// processing null.
	Morgue *MorgueEntry `json:"morgue,omitempty"`
	// Finished is the id's finished record on a queue with
	// retain_finished, omitted when it has none (docs/contract.md §3.14).
	Finished *FinishedJob `json:"finished,omitempty"`
}

// FinishedJob is the record an acknowledged id leaves on a queue with
// retain_finished (docs/contract.md §3.14): when it finished (unix
// seconds), how many calls it took, the error of its last failed attempt
// ("" when none failed), its last failed attempts with their times
// ("errors", at most 5, oldest first; omitted when none failed while the
// queue retained finished ids) and the result its handler set: "result" when its
// bytes are compact JSON, else "result_base64"; neither when it set none.
type FinishedJob struct {
	ID           string          `json:"id"`
	FinishedAt   float64         `json:"finished_at"`
	Attempts     int             `json:"attempts"`
	Error        string          `json:"error"`
	Errors       []AttemptError  `json:"errors,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	ResultBase64 *string         `json:"result_base64,omitempty"`
}

// AttemptError is one failed attempt of a finished id: when (unix
// seconds) and its error.
type AttemptError struct {
	At    float64 `json:"at"`
	Error string  `json:"error"`
}

// FinishedPage is the answer of GET /api/v1/queues/{q}/finished. Next is
// the cursor of the following page, empty on the last.
type FinishedPage struct {
	Jobs []FinishedJob `json:"jobs"`
	Next string        `json:"next"`
}

// NewFinishedJob converts a finished record to its wire form.
func NewFinishedJob(f persistence.FinishedJob) FinishedJob {
	out := FinishedJob{ID: f.ID, FinishedAt: persistence.UnixSeconds(f.FinishedAt), Attempts: f.Attempts, Error: f.Error}
	for _, e := range f.Errors {
		out.Errors = append(out.Errors, AttemptError{At: persistence.UnixSeconds(e.At), Error: e.Error})
	}
	switch {
	case f.Result == nil:
	case wire.IsCompactJSON(f.Result):
		out.Result = json.RawMessage(f.Result)
	default:
		b := base64.StdEncoding.EncodeToString(f.Result)
		out.ResultBase64 = &b
	}
	return out
}

// Batch is the in-flight batch of a shard, with the owner that fetched it.
type Batch struct {
	Shard     int         `json:"shard"`
	Owner     string      `json:"owner"`
	Epoch     int64       `json:"epoch"`
	Seq       int64       `json:"seq"`
	FetchedAt float64     `json:"fetched_at"`
	Jobs      []ListedJob `json:"jobs"`
}

// Processing is the answer of GET /api/v1/queues/{q}/processing, by shard.
type Processing struct {
	Batches []Batch `json:"batches"`
}

// MorgueEntry is an id in the morgue: its payloads whose retries ran out,
// when it last went there and the last error.
type MorgueEntry struct {
	ID        string  `json:"id"`
	UpdatedAt float64 `json:"updated_at"`
	// FirstAt is when the entry was created (its first payload died), unix
	// seconds; omitted for an entry written by a release that did not keep
	// it.
	FirstAt      *float64       `json:"first_at,omitempty"`
	Error        string         `json:"error"`
	Payloads     []wire.Payload `json:"payloads"`
	PayloadCount int            `json:"payload_count"`
}

// MorguePage is the answer of GET /api/v1/queues/{q}/morgue. Next is the
// cursor of the following page, empty on the last.
type MorguePage struct {
	Entries []MorgueEntry `json:"entries"`
	Next    string        `json:"next"`
	// Scanned is how many entries an error search (error=) read; absent
	// from other listings.
	Scanned *int `json:"scanned,omitempty"`
}

// Selection is the body of POST /api/v1/queues/{q}/morgue/requeue and
// /morgue/delete: the ids to act on, or All for the whole morgue (exactly
// one of the two).
type Selection struct {
	IDs []string `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// Requeued is the answer of POST /api/v1/queues/{q}/morgue/requeue.
type Requeued struct {
	Requeued int `json:"requeued"`
}

// Deleted is the answer of the endpoints that delete: how many ids they
// deleted.
type Deleted struct {
	Deleted int `json:"deleted"`
}

// Member is a node of the cluster, as the answering node sees it.
type Member struct {
	Name string `json:"name"`
	// State is alive, draining, dead or foreign (another store's member).
	State   string   `json:"state"`
	HTTP    string   `json:"http"`
	Actor   string   `json:"actor"`
	Queues  []string `json:"queues"`
	Version string   `json:"version,omitempty"`
}

// Shard is one shard and the node holding its lease.
type Shard struct {
	Queue string `json:"queue"`
	Shard int    `json:"shard"`
	// Owner is the name of the node holding the lease, "" when none does.
	Owner string `json:"owner"`
	Epoch int64  `json:"epoch"`
}

// Cluster is the answer of GET /api/v1/cluster: the answering node's name,
// the members and, for every shard of every queue, who holds its lease.
type Cluster struct {
	Self    string   `json:"self"`
	Members []Member `json:"members"`
	Shards  []Shard  `json:"shards"`
	// EmbeddedStore reports that the answering node runs on the embedded
	// in-memory store: nothing survives its stop, and no other node can
	// share its queues.
	EmbeddedStore bool `json:"embedded_store,omitempty"`
	// Quiet reports that the answering node is quiet: it serves no shard
	// until resumed (POST /api/v1/node/resume); absent while it serves.
	Quiet bool `json:"quiet,omitempty"`
}

// NodeQuiet is the answer of POST /api/v1/node/quiet and /resume: the node
// that served the request and whether it is quiet now.
type NodeQuiet struct {
	Node  string `json:"node"`
	Quiet bool   `json:"quiet"`
}

// Status is the answer of the probes, GET /healthz and /readyz.
type Status struct {
	Status string `json:"status"`
}

// Access is the answer of GET /api/v1/access: what the credentials of the
// request allow.
type Access struct {
	// Write reports that the request may change state (enqueue, delete,
	// queue actions, the morgue); false for the read-only token and for
	// public reads.
	Write bool `json:"write"`
	// TokenRequired reports that the server requires a bearer token.
	TokenRequired bool `json:"token_required"`
}

// Minute is a queue's metrics (or the total of every queue's) at the turn
// of a minute, a point of GET /api/v1/queues/{q}/history and
// /api/v1/history.
type Minute struct {
	// T is when the sample was taken: the start of its minute, in unix
	// seconds.
	T float64 `json:"t"`
	// Processed and Failed count the ids settled in the minute before T;
	// null when the history lacks that minute's sample to count from.
	Processed *int64 `json:"processed"`
	Failed    *int64 `json:"failed"`
	// Length, MorgueLength, Busy and Lag are the metrics at T (the total
	// lag is the largest).
	Length       int64   `json:"length"`
	MorgueLength int64   `json:"morgue_length"`
	Busy         int64   `json:"busy"`
	Lag          float64 `json:"lag"`
}

// History is the answer of GET /api/v1/queues/{q}/history (Queue set) and
// /api/v1/history (the totals of every queue, Queue empty): the samples of
// the last minutes asked for, oldest first.
type History struct {
	Queue   string   `json:"queue,omitempty"`
	Minutes []Minute `json:"minutes"`
}
