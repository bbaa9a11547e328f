// Package cluster makes Orderly nodes a cluster: membership by gossip
// (hashicorp/memberlist) and the placement of shards over the members
// (rendezvous hashing). Membership only says which node should try to serve
// a shard; the shard's lease in Redis decides which node may (see
// actors/shard). Two nodes never serve one shard, even when their views of
// the cluster disagree.
//
// This package is the node's machinery, not a programming interface: its
// exported names serve the node runtime (internal/engine) and may change in
// any release. Programs configure a cluster with orderly.ClusterConfig.
//
// # Membership
//
// Nodes join through seeds and keep re-joining any seed address they do not
// see (every RejoinInterval, and within DefaultAloneRejoinInterval while
// alone): after a partition heals, memberlist alone often never merges the
// two sides again. A seed may be a DNS name (every address it resolves to)
// or SRVPrefix and a name of SRV records; names are looked up again at every
// re-join (discovery.go), so that peers appearing in DNS later are found. The gossip profile is memberlist's LAN
// profile with faster failure detection (config.go, one commented line per
// override: ProbeInterval 200 ms, ProbeTimeout 100 ms, SuspicionMult 2: a
// SIGKILL is noticed in about 0.7 to 0.9 s on a LAN; the LAN profile takes 5
// to 6 s). Each node advertises metadata (at most 512 bytes): its HTTP and actor
// addresses, version, the queues it serves, and two flags: draining (set
// before a graceful leave or while quiet; memberlist cannot tell a leave
// from a death) and unhealthy (set while the node cannot reach Redis); and
// the identity of its store (Meta.Store). A member whose store differs from
// this node's is foreign: it is listed as such, logged once and left out
// of placement, since it would serve the shards it takes in another Redis
// (a misconfigured or rogue peer); a member that advertises no store
// (before it read it, or an earlier version) counts as the same store.
// memberlist calls its event callbacks under its own lock, so they only
// copy the node and signal a channel; everything else happens outside
// (LOCKS.md at the repository root has the lock order).
//
// A Service runs the node's cluster loops over its Membership: the
// placement loop, the health loop (below) and the sweep for shards no node
// serves (orphans.go), with Start and Stop.
//
// # Placement and rebalancing
//
// Placement is rendezvous hashing with bounded loads over the eligible
// members of a queue (alive, not draining, not foreign, not unhealthy,
// serving it): every
// (shard, member) pair gets hash(queue, shard, member name); pairs are taken
// in descending order and a shard goes to the first member with room, each
// member holding floor or ceil of shards/members. Every node computes the
// whole placement from its own view and serves its part (the Service's
// Assign). The split
// is even, and a join or a leave moves about the shards it must (a quarter
// of them when a fourth node joins three) and few others.
//
// Handoff when a shard moves:
//
//	old owner (no longer assigned)          new owner (newly assigned)
//	  stop fetching                           try AcquireShard: held, retry
//	  finish the batch (or cancel it at       (every LeaseTTL/10, and at once on
//	  handoff_timeout), acknowledge it        the release notice)
//	  ReleaseShard (publishes a notice) ───▶  AcquireShard succeeds, serve
//
// No batch is cut and nothing is delivered twice on a graceful handoff. On a
// crash the new owner waits for the lease to expire (lease_ttl after the
// last renewal), then restores the dead owner's in-flight batch, which is
// delivered again (at least once).
//
// # Failure cases
//
//   - Partition: each side believes the other dead and assigns itself the
//     other side's shards; the acquisitions fail while the other side still
//     renews its leases, so each shard keeps exactly one holder. After the
//     heal, the re-join loop merges the views and shards settle where the
//     placement says.
//   - A node loses Redis: it cannot renew, so each shard actor cancels its
//     handler before the lease can expire; the node also advertises
//     unhealthy, so the others take its shards over when the leases expire.
//   - Flapping: a view change only reassigns what changed; a shard that moves
//     and comes back waits for the drain and the release each way.
package cluster
