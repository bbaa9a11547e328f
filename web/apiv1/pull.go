package apiv1

import "github.com/orderlyhq/orderly/webhook/wire"

// PullRequest is the body of POST /api/v1/queues/{q}/pull.
type PullRequest struct {
	// MaxIDs bounds the ids of the lease; at least the queue's batch_size
	// (a batch is never split).
	MaxIDs int `json:"max_ids"`
	// Wait is how long, in seconds, the pull may wait for a batch
	// (0..MaxPullWait); 0 answers at once.
	Wait float64 `json:"wait"`
}

// MaxPullWait bounds PullRequest.Wait, in seconds.
const MaxPullWait = 30

// PullLease is the 200 answer of a pull.
type PullLease struct {
	// Lease names the lease in its answer and extensions; opaque.
	Lease string `json:"lease"`
	// Deadline is when the lease ends without an answer, in unix seconds.
	Deadline float64 `json:"deadline"`
	// Jobs are the batch, in the shape of a webhook request's jobs.
	Jobs []wire.Job `json:"jobs"`
}

// PullExtend is the body of POST /api/v1/queues/{q}/pull/{lease}/extend.
type PullExtend struct {
	// By is how long after now, in seconds, the deadline moves to (at
	// most the call's deadline, never earlier than it was).
	By float64 `json:"by"`
}

// PullDeadline is the 200 answer of an extension.
type PullDeadline struct {
	Deadline float64 `json:"deadline"`
}

// PullAnswered is the 200 answer of an answer: the lease's calls took it.
type PullAnswered struct {
	Accepted bool `json:"accepted"`
	// Lost are the ids of a lease of several calls whose call ended
	// (its shard lost, its deadline) before the answer reached it:
	// nothing of the answer is committed for them. Absent when none.
	Lost []string `json:"lost,omitempty"`
	// Next is the lease of the answer's "next" pull (PullAnswerNext), in
	// the 200 shape of a pull; absent when the answer asked none or
	// nothing came within its wait.
	Next *PullLease `json:"next,omitempty"`
}

// PullAnswerNext is the "next" member of an answer's body (the rest is a
// webhook answer, wire.Answer): once the answer is accepted the node pulls
// with these values, as POST /api/v1/queues/{q}/pull would, and the 200
// answer carries the lease in PullAnswered.Next.
type PullAnswerNext = PullRequest

// PullConflict is the 409 answer of an answer or extension for a lease
// that is no longer valid; nothing was committed.
type PullConflict struct {
	Error string `json:"error"`
	// Reason is "deadline passed", "lease lost" or "unknown lease".
	Reason string `json:"reason"`
}

// PullQueue is a pull queue's workers on the answering node.
type PullQueue struct {
	// WaitingWorkers counts the pulls waiting for a batch.
	WaitingWorkers int `json:"waiting_workers"`
	// HeldLeases counts the batches held by workers.
	HeldLeases int `json:"held_leases"`
	// PendingBatches counts the batches waiting for a pull.
	PendingBatches int `json:"pending_batches"`
}
