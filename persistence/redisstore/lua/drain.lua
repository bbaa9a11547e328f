-- drain.lua: one step of draining a shard that a reshard moves to the
-- queue's next generation (docs/storage.md section 11), by the shard's
-- owner. "export" takes the next part of what the shard holds out of it
-- into the meta's export entry (the journal: one entry at a time), which
-- the caller imports into the new shards (import.lua) and then confirms
-- with "ack".
-- lib: keys fence clock fields cold
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] lease token of the caller
-- ARGV[3] "export" or "ack"
-- ARGV[4] export: how many ids to take at most; ack: the entry's seq
--
-- export takes, in this order, the ids' states, their timers, their queued
-- jobs (with every payload, up to PAYLOADS per id and step; the first due
-- first), morgue
-- entries, finished records, attempt histories and dedup keys, each part
-- removed from the shard; so an id's state and timer are in its new shard
-- before any of its jobs. Each item of the entry is fld(kind) fld(id)
-- fld(data):
--   "s" state hash entry as stored     "t" timer: fire time
--   "j" job record (lib/cold.lua's encoding, payloads inline; its fifo seq,
--       if any, means nothing)
--   "m" morgue record (the same)        "f" fld(finished_at) finished record
--   "a" fld(last failure time) history  "d" fld(window end) dedup key
-- Nothing moves while the outbox holds entries (the owner relays them
-- first: a change feed entry of an id is published before its new shard's).
-- When nothing is left (the shard holds nothing in flight), export seals
-- the shard (meta "xs" = "s": enqueues wait) and
-- its entry is the final one: "c" with "" and the counters (fld(name)
-- fld(value) each), for one new shard, and "k" with "" and the marks
-- (tick:*, hw) for every new shard. The relay marks stay: a relay sent
-- back by the drained shard (RESHARDED) reads them there (enqueue.go). The counters leave the
-- shard's meta.
--
-- Returns:
--   {"entry", seq, entry, final ("1"/"0"), jobs}: the entry to import (the
--     same again until acked, after a lost reply or a new owner); jobs
--     counts its "j" items
--   {"outbox", n}: n outbox entries to relay first
--   {"done"}: the shard is drained (its fence is MOVED)
-- ack returns {"ok"}; after the final entry the shard's fence becomes MOVED
-- and meta "xs" "m": enqueues get RESHARDED from then on.
-- Error replies: "LEASE_LOST"; "NOT_DRAINING" when no reshard drains the
-- shard; "IN_FLIGHT" when the shard holds an in-flight batch (the owner
-- settles it first: Advance).
--
-- Cost: O(items + payloads) of the entry, at most about LIMIT_BYTES of
-- data per step.

init_clock(ARGV[1])
local C = cold()
local PAYLOADS, LIMIT_BYTES = 1000, 1048576

local v = redis.call("MGET", K.lease, K.v1lease)
if v[1] ~= ARGV[2] or not fenced(v[2]) then return redis.error_reply("LEASE_LOST") end
if v[2] == MOVED then return {"done"} end
if v[2] ~= DRAIN then return redis.error_reply("NOT_DRAINING the shard is not being resharded") end

local meta = redis.call("HMGET", K.meta, "xj", "xseq", "xf", "xn")

if ARGV[3] == "ack" then
  if meta[1] and meta[2] == ARGV[4] then
    redis.call("HDEL", K.meta, "xj", "xf", "xn")
    if meta[3] == "1" then
      redis.call("SET", K.v1lease, MOVED)
      redis.call("HSET", K.meta, "xs", "m")
    end
  end
  return {"ok"}
end

if meta[1] then return {"entry", meta[2], meta[1], meta[3] or "0", tonumber(meta[4] or "0")} end
if redis.call("EXISTS", K.inflight) == 1 then
  return redis.error_reply("IN_FLIGHT the shard's in-flight batch is not settled")
end
-- The outbox is relayed before anything moves: a change feed entry of an
-- id must be published before those its new shard writes.
do
  local ob = redis.call("XLEN", K.outbox)
  if ob > 0 then return {"outbox", ob} end
end

local limit = tonumber(ARGV[4])
local items, n, bytes, njobs = {}, 0, 0, 0
local function put(kind, id, data)
  items[#items + 1] = fld(kind) .. fld(id) .. fld(data)
  n = n + 1
  bytes = bytes + #id + #data
end
local function full() return n >= limit or bytes >= LIMIT_BYTES end

-- scan_hash hands fields of hash key to take(field, value) until full,
-- from the cursor kept in meta "xc:<name>" (fields taken are deleted by
-- take, so the scan sees each once).
local function scan_hash(key, name, take)
  local cf = "xc:" .. name
  local cur = redis.call("HGET", K.meta, cf) or "0"
  for _ = 1, 16 do
    if full() then break end
    local r = redis.call("HSCAN", key, cur, "COUNT", math.max(limit - n, 10))
    cur = r[1]
    local kv = r[2]
    for i = 1, #kv, 2 do
      -- Fields left here are met again by a later pass of the scan.
      if full() then break end
      take(kv[i], kv[i + 1])
    end
    if cur == "0" then break end
  end
  if cur == "0" then redis.call("HDEL", K.meta, cf) else redis.call("HSET", K.meta, cf, cur) end
end

-- take_record exports record s of id from hash key (namespace ns: "q"
-- queued, "m" morgue) with up to PAYLOADS payloads; what is left stays.
local function take_record(ns, key, id, s)
  local flags, _, rc, fseq = rec_head(s)
  if ns == "q" and flags % 8 < 4 then
    -- No overflow (most records): the record goes as it is stored (the
    -- import ignores its fifo seq).
    put("j", id, s)
    njobs = njobs + 1
    C.unlink(id, {fseq = fseq, rc = rc, pri = math.floor(flags / 64) + 1})
    return
  end
  local r = C.rec_decode(s)
  local ps = C.take_payloads(ns, id, r, PAYLOADS)
  local out = {at = r.at, rc = r.rc, err = r.err, hold = r.hold, ovn = 0, ovh = false, ps = ps, pri = r.pri}
  put(ns == "q" and "j" or "m", id, C.rec_encode(out))
  local left = #r.ps > 0 or r.ovn > 0
  if ns == "q" then
    njobs = njobs + 1
    -- What is left of it waits in later (its fifo entry may be gone).
    if left then
      r.fseq = nil
      C.store(id, r, r.rc)
    else
      C.unlink(id, r)
    end
  elseif left then
    redis.call("HSET", key, id, C.rec_encode(r))
  else
    redis.call("HDEL", key, id)
    redis.call("ZREM", K.mat, id)
  end
end

scan_hash(K.state, "s", function(id, s)
  put("s", id, s)
  redis.call("HDEL", K.state, id)
end)
if not full() then
  local ts = redis.call("ZRANGE", K.timers, 0, limit - n - 1, "WITHSCORES")
  for i = 1, #ts, 2 do
    put("t", ts[i], ts[i + 1])
    redis.call("ZREM", K.timers, ts[i])
  end
end
-- Queued jobs in about the order the shard would have fetched them, so
-- that the ids due first move first and their new shards take them at
-- once: the fifo's head, then later and the priority zsets by due time;
-- then a scan of the records for anything else.
if not full() then
  local fel = redis.call("LRANGE", K.fifo, 0, limit - n - 1)
  local used = 0
  for _, e in ipairs(fel) do
    if full() then break end
    used = used + 1
    local c = string.find(e, ":", 1, true)
    local id = c and string.sub(e, c + 1)
    local s = id and redis.call("HGET", K.jobs, id)
    if s then
      local _, _, _, fseq = rec_head(s)
      if fseq == string.sub(e, 1, c - 1) then take_record("q", K.jobs, id, s) end
    end
  end
  if used > 0 then redis.call("LTRIM", K.fifo, used, -1) end
end
for _, z in ipairs({K.later, K.p2, K.p3, K.p4}) do
  if full() then break end
  for _, id in ipairs(redis.call("ZRANGE", z, 0, limit - n - 1)) do
    if full() then break end
    local s = redis.call("HGET", K.jobs, id)
    if s then take_record("q", K.jobs, id, s) else redis.call("ZREM", z, id) end
  end
end
if not full() then scan_hash(K.jobs, "j", function(id, s) take_record("q", K.jobs, id, s) end) end
if not full() then scan_hash(K.morgue, "m", function(id, s) take_record("m", K.morgue, id, s) end) end
if not full() then
  scan_hash(K.fin, "f", function(id, s)
    put("f", id, fld(redis.call("ZSCORE", K.fat, id) or "0") .. s)
    redis.call("HDEL", K.fin, id)
    redis.call("ZREM", K.fat, id)
  end)
end
if not full() then
  scan_hash(K.att, "a", function(id, s)
    put("a", id, fld(redis.call("ZSCORE", K.aat, id) or "") .. s)
    redis.call("HDEL", K.att, id)
    redis.call("ZREM", K.aat, id)
  end)
end
if not full() then
  local ds = redis.call("ZRANGE", K.dedup, 0, limit - n - 1, "WITHSCORES")
  for i = 1, #ds, 2 do
    local id, pos = rdf(ds[i], 1)
    if ds[i + 1] and tonumber(ds[i + 1]) > NOWN then
      put("d", id, fld(ds[i + 1]) .. string.sub(ds[i], pos))
    end
    redis.call("ZREM", K.dedup, ds[i])
  end
end

local final = "0"
if n == 0 then
  if redis.call("HLEN", K.jobs) + redis.call("HLEN", K.morgue) + redis.call("HLEN", K.state)
      + redis.call("ZCARD", K.timers) + redis.call("HLEN", K.fin) + redis.call("HLEN", K.att)
      + redis.call("ZCARD", K.dedup) > 0 then
    -- Left behind by a scan's cursor: the next step starts over.
    return {"entry", meta[2] or "0", "", "0", 0}
  end
  -- Seal: the counters and marks go to the new shards with the last entry.
  local all = redis.call("HGETALL", K.meta)
  local counters, marks, del = {}, {}, {}
  local COUNTERS = {processed = true, failed = true, snoozed = true, discarded = true, cancelled = true,
    expired = true}
  for i = 1, #all, 2 do
    local f, x = all[i], all[i + 1]
    if COUNTERS[f] then
      counters[#counters + 1] = fld(f) .. fld(x)
      del[#del + 1] = f
    elseif f == "hw" or string.sub(f, 1, 5) == "tick:" then
      marks[#marks + 1] = fld(f) .. fld(x)
    end
  end
  items = {fld("c") .. fld("") .. fld(table.concat(counters)), fld("k") .. fld("") .. fld(table.concat(marks))}
  if #del > 0 then redis.call("HDEL", K.meta, unpack(del)) end
  redis.call("DEL", K.fifo)
  redis.call("HDEL", K.meta, "fseq", "tat", "tid")
  redis.call("HSET", K.meta, "xs", "s")
  final = "1"
end

local seq = tostring(tonumber(meta[2] or "0") + 1)
local entry = table.concat(items)
redis.call("HSET", K.meta, "xj", entry, "xseq", seq, "xf", final, "xn", tostring(njobs))
if njobs > 0 then redis.call("HINCRBY", K.meta, "xmoved", njobs) end
return {"entry", seq, entry, final, njobs}
