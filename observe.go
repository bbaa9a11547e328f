package orderly

import (
	"time"

	"github.com/orderlyhq/orderly/persistence"
)

// Observer receives a node's batch and lease events, for metrics
// (metrics.Metrics is one). Calls come from the shards' goroutines,
// concurrently for different shards and for the calls of one shard that
// run at once (Worker.ConcurrentCalls); they must not block.
type Observer interface {
	// BatchDone reports a handler call: how many ids it held, how many
	// failed, how long it ran; err is the whole call's error, if any.
	BatchDone(ref persistence.ShardRef, ids, failed int, d time.Duration, err error)
	// LeaseLost reports that the node lost a shard's lease while holding
	// it (Redis unreachable, or another node took the shard over).
	LeaseLost(ref persistence.ShardRef)
}

// NodeStatus is a node's view of the shards it should serve (Node.Status).
type NodeStatus struct {
	// Assigned counts the shards the node should serve; Serving those it
	// holds the lease of and reached the store for on the last call.
	Assigned, Serving int
	// Waiting and Running count shards waiting for, and holding, one of
	// the node's Concurrency permits.
	Waiting, Running int
	// Shards are the assigned shards, by queue and shard number.
	Shards []ShardStatus
}

// ShardStatus describes one shard a node should serve.
type ShardStatus struct {
	Ref persistence.ShardRef
	// Serving is true while the node holds the shard's lease and its last
	// store call succeeded.
	Serving bool
	// Epoch is the fencing epoch of the node's lease (0 without one).
	Epoch int64
	// Err is the last problem, while there is one ("lease lost: ...",
	// "advance: ..."): why the shard is not served.
	Err string
	// StuckSince is the start of a handler call running past its deadline
	// (by more than a few seconds: the handler ignores its context); zero
	// otherwise. The shard serves nothing else until the call returns.
	StuckSince time.Time
}

// MemberState is the state of a cluster member as a node sees it.
type MemberState string

// Member states.
const (
	// MemberAlive members gossip and serve their share of the shards.
	MemberAlive MemberState = "alive"
	// MemberDraining members are quiet or leaving: they gossip but serve
	// no shard.
	MemberDraining MemberState = "draining"
	// MemberDead members stopped answering; they are listed for a while
	// (ten minutes) for operators to see.
	MemberDead MemberState = "dead"
	// MemberForeign members gossip with this node but use another store
	// (another Redis, or another prefix): they serve nothing of this
	// store's shards and are ignored for placement.
	MemberForeign MemberState = "foreign"
)

// Member is a node of the cluster as this node sees it (Node.Members).
type Member struct {
	Name string
	// Addr is the member's gossip address (empty on a node without a
	// cluster).
	Addr  string
	State MemberState
	// HTTP and Actor are the addresses of the member's HTTP API and of its
	// actor remote, when it advertises them.
	HTTP, Actor string
	Version     string
	// Queues are the queues the member serves.
	Queues []string
	// Unhealthy is set while the member cannot reach Redis: it serves no
	// shard then.
	Unhealthy bool
	// Since is when the member entered its state, as seen by this node
	// (zero for this node itself).
	Since time.Time
}
