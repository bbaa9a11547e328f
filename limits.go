package orderly

import "fmt"

// MaxNodeShards caps the shards one node serves: the sum of the shard counts
// of its workers' queues. Each shard is an actor that holds a lease in
// Redis (the node renews all its leases together, one round trip every
// third of LeaseTTL) and polls for work when idle, so a node's memory, CPU
// and Redis load grow with its shards even when no job comes. Measured on a
// 2-core machine (shared, Redis 7 on loopback, idle queues, the default
// LeaseTTL) before renewals were batched: 4,096 shards took 100-120 MiB and
// a third of a core; 8,192 took 170 MiB, 60-70% of a core and a quarter of Redis's;
// at 16,384 the node could no longer renew its leases in time and lost them
// by the tens of thousands a minute. A cluster spreads the shards over its
// nodes, but every node must be able to serve them all when it is alone.
const MaxNodeShards = 8192

// checkShardTotal returns an error when total, the shards of all the queues
// of a node, is more than MaxNodeShards.
func checkShardTotal(total int) error {
	if total > MaxNodeShards {
		return fmt.Errorf("orderly: %d shards in total is more than one node can serve (at most %d, MaxNodeShards): use fewer shards per queue, or fewer queues", total, MaxNodeShards)
	}
	return nil
}
