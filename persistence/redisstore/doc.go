// Package redisstore implements persistence.Store on Redis (6.2 or newer,
// standalone, Sentinel or Cluster) with go-redis v9. The same scripts run on
// the embedded in-memory server used by the quick start.
//
// docs/storage.md is the design: the layouts measured, the keys, the
// encodings, the rules the scripts keep, the cost of each operation, and
// the upgrade from (and rollback to) the previous release's layout.
//
// New takes a go-redis client as the caller built it. Build it from a
// Redis URL (persistence/redisurl) to get the options the orderly binary
// uses, DisableIdentity among them; a client built by hand should set
// DisableIdentity: true, or every new connection costs a CLIENT SETINFO
// round trip before its first command (see New and Store.Warm).
//
// # Data model (storage layout 2)
//
// Keys are built in keys.go only. Each (queue, shard) owns a set of keys that
// share one hash tag, so every script touches one Cluster slot, and every
// key a script touches is passed in KEYS. Per shard:
//
//	2:jobs      HASH   queued id -> job record (payloads inline, up to 64)
//	2:fifo      LIST   "fseq:id" of jobs due when queued, in (perform_at, id) order
//	2:later     ZSET   id -> due time of the other queued jobs
//	2:p2..2:p4  ZSET   id -> due time of queued ids of priority 2 to 4
//	2:retries   ZSET   id -> retry count, failed jobs only
//	2:ovo 2:ovs        payloads beyond an id's inline ones (queued and morgue)
//	2:inflight  STRING the batch being processed (codec.go)
//	2:lease     STRING the owner's token "<epoch>/<owner>/<nonce>", with a TTL
//	2:meta      HASH   counters and shard state
//	2:morgue 2:mat     the morgue: records, and ids by updated_at
//	2:outcome   STRING the last settlement's dead report, until confirmed
//	lease epoch        shared with layout 1: its lease key holds the fence
//
// A queued job with one small payload needs no key of its own: about 120
// bytes of Redis memory.
//
// # Scripts and round trips
//
// Every change of state is one Lua script (lua/*.lua, embedded; each file
// states its KEYS, ARGV, reply and cost), loaded when the store registers
// its first queue and called by SHA; one helper (runAll) sends calls and
// pipelines and reloads scripts on NOSCRIPT.
//
//   - Enqueue: one script call per shard touched (per EnqueueChunk jobs),
//     all in one pipeline.
//   - Processing: advance.lua settles the previous window and fetches the
//     next in one call: one round trip per window.
//   - Fencing: every script that changes a shard's processing state
//     compares the caller's token with the lease and checks the fence, and
//     refuses (ErrLeaseLost) otherwise.
//   - Time: scripts read Redis TIME for due checks and defaults, unless the
//     test seam Config.Now is set.
//
// Scores and times are kept as decimal strings, so no precision is lost
// through Lua numbers. Byte-wise comparisons in Lua use Lua's < on strings
// only where the server's collation was checked to be byte order.
package redisstore
