// Package redisstore implements persistence.Store on Redis (6.2 or newer,
// standalone or Cluster) with go-redis v9. The same scripts run on the
// embedded in-memory server used by the quick start.
//
// # Data model
//
// Keys are built in keys.go only. Each (queue, shard) owns a set of keys that
// share one hash tag, so every script touches one slot; queue-wide views
// (stats, listings) merge the shards. Per shard:
//
//	due       ZSET   queued id -> perform_at (the fetch order)
//	ids       ZSET   queued id -> 0 (listing by id)
//	retries   ZSET   queued id -> retry_count (-1 = fresh)
//	errors    HASH   queued id -> last error
//	p:<id>    ZSET   queued payloads of one id -> score
//	inflight  STRING the batch being processed (codec.go)
//	lease     STRING owner's fencing token "<epoch>/<owner>", with a TTL
//	epoch     STRING acquisitions of the shard (INCR)
//	stats     HASH   processed, failed
//	morgue, morgue_ids, morgue_errors, m:<id>: the morgue, the same way
//
// # Scripts and round trips
//
// Every change of state is one Lua script (lua/*.lua, embedded; each file
// states its KEYS, ARGV and return), loaded once and called by SHA. The
// scripts share lua/lib.lua, prepended at load time.
//
//   - Enqueue: one script call per shard touched (per EnqueueChunk jobs),
//     all in one pipeline; four commands per job inside Redis.
//   - Processing: advance.lua settles the previous batch and fetches the
//     next in one call. At batch size 1 a job costs one round trip and ten
//     Redis-side commands (EVALSHA, MGET, HINCRBY, ZPOPMIN, ZMSCORE,
//     ZRANGE, DEL, ZREM, ZREM, SET); the fixed part is shared by the ids of
//     a larger batch.
//   - Fencing: every script that changes a shard's processing state
//     compares the caller's token with the lease key and refuses
//     (ErrLeaseLost) when they differ.
//
// Scores and times are sent as shortest round-trip decimal strings and kept
// as Redis formats them, so no precision is lost through Lua numbers.
// Byte-wise comparisons in Lua never use the < operator on strings (it
// follows the server's locale).
package redisstore
