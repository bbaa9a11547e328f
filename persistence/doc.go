// Package persistence defines Orderly's durable queue: the Store interface,
// in roles that follow its callers (a node needs NodeStore: Producer,
// ShardStore, QueueStore, ControlStore; the HTTP API and the dashboard also
// Inspector, Admin, StateStore and FeedStore), the job and batch types they
// exchange, and the errors they branch on.
//
// The one implementation is persistence/redisstore, which runs the same Lua
// scripts on a real Redis server and on the embedded in-memory store; the
// conformance suite in persistence/storetest checks every implementation
// against the rules of the product contract (docs/contract.md §3).
//
// # Vocabulary
//
// A queue is split into a fixed number of shards; the shard of a job is
// ShardOf(id, shards), CRC-32 (IEEE) of the id modulo the shard count, so all
// jobs of one id live in one shard forever. A queued job is an id with a set of
// payloads (each with a float score), a perform_at time, a retry count (-1 for
// a job that never failed) and the last error. A shard's owner holds a Lease;
// it repeatedly calls Advance, which settles the batch it processed (success,
// partial failure or failure) and fetches the next one in a single atomic
// step. What a batch leaves behind after a crash is restored into the queue
// by the next AcquireShard.
package persistence
