-- lib/keys.lua: the shard key set K.
-- lib: none
--
-- Every shard script receives the shard's keys in this order (keys.go):
--   KEYS[1]  lease (layout 1)  STRING  layout 1's lease, or the fence FENCE
--   KEYS[2]  epoch             STRING  highest epoch issued
--   KEYS[3]  2:lease           STRING  the owner's token, with a TTL
--   KEYS[4]  2:jobs            HASH    queued id -> job record
--   KEYS[5]  2:fifo            LIST    "fseq:id" of jobs due when queued
--   KEYS[6]  2:later           ZSET    id -> due time of the other queued jobs
--   KEYS[7]  2:retries         ZSET    id -> retry count (>= 0 only)
--   KEYS[8]  2:ovo             ZSET    overflow payloads, lexicographic
--   KEYS[9]  2:ovs             HASH    overflow payload -> score key
--   KEYS[10] 2:inflight        STRING  the in-flight batch
--   KEYS[11] 2:meta            HASH    counters and shard state
--   KEYS[12] 2:morgue          HASH    morgue id -> morgue record
--   KEYS[13] 2:mat             ZSET    morgue id -> updated_at
--   KEYS[14] 2:outcome         STRING  the last settlement's dead report
--   KEYS[15..23] layout 1's due, ids, retries, errors, inflight, stats,
--                morgue, morgue_ids, morgue_errors
--   KEYS[24] 2:state           HASH    id -> fld(version) state bytes, or a
--                                      tombstone "\0" fld(version)
--   KEYS[25] 2:timers          ZSET    id -> fire time (reserved)
--   KEYS[26] 2:outbox          STREAM  emits (field "e") and change feed
--                                      entries (field "f") to relay
--   KEYS[27] 2:dedup           ZSET    dedup key -> expiry (unix seconds) of
--                                      a queue with a dedup_window
--   KEYS[28] 2:fin             HASH    finished id -> finished record
--                                      (retain_finished)
--   KEYS[29] 2:fat             ZSET    finished id -> finished_at
--   KEYS[30] 2:att             HASH    id -> its failed attempts' history
--                                      (retain_finished), until it finishes
--   KEYS[31] 2:aat             ZSET    id -> time of its last failed attempt
--   KEYS[32..34] 2:p2, 2:p3, 2:p4 ZSET id -> due time of the queued ids of
--                                      priority 2, 3, 4 (docs/contract.md
--                                      §3.16); priority 1 ids are in fifo
--                                      or later
-- Scripts that read layout 1's per-id keys receive them from KEYS[35] on
-- (FIXED_KEYS + 1).
-- All keys share one hash tag, so a script touches one cluster slot.

local K = {
  v1lease = KEYS[1], epoch = KEYS[2], lease = KEYS[3], jobs = KEYS[4],
  fifo = KEYS[5], later = KEYS[6], retries = KEYS[7], ovo = KEYS[8],
  ovs = KEYS[9], inflight = KEYS[10], meta = KEYS[11], morgue = KEYS[12],
  mat = KEYS[13], outcome = KEYS[14],
  v1due = KEYS[15], v1ids = KEYS[16], v1retries = KEYS[17],
  v1errors = KEYS[18], v1inflight = KEYS[19], v1stats = KEYS[20],
  v1morgue = KEYS[21], v1morgue_ids = KEYS[22], v1morgue_errors = KEYS[23],
  state = KEYS[24], timers = KEYS[25], outbox = KEYS[26], dedup = KEYS[27],
  fin = KEYS[28], fat = KEYS[29], att = KEYS[30], aat = KEYS[31],
  p2 = KEYS[32], p3 = KEYS[33], p4 = KEYS[34],
}
-- PKEY[p] is the zset of queued ids of priority p (2..4).
local PKEY = {nil, KEYS[32], KEYS[33], KEYS[34]}
local FIXED_KEYS = 34
