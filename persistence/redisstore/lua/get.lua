-- get.lua: one id, as stored: its queued record (or morgue record), the
-- start of its overflow, the shard's in-flight record and, while the store
-- is being upgraded, its layout 1 entry. Read only.
-- lib: keys cold
--
-- KEYS: the shard key set (lib/keys.lua); with ARGV[4] = "1", KEYS[35] is layout
-- 1's payload key "p:<id>" of the id.
-- ARGV[1] id
-- ARGV[2] "q" for the queue, "m" for the morgue
-- ARGV[3] how many payloads to return at most
-- ARGV[4] "1" to read layout 1's entry too
-- ARGV[5] "1" to read the id's morgue entry and finished record too (with
--         ARGV[2] = "q")
--
-- Returns {record, overflow, inflight, v1, state, timer, mrecord, moverflow,
-- finished}:
-- record is the record ("" when
-- none); overflow a flat list {score, payload, headers, ...} of the payloads that
-- follow the inline ones, up to ARGV[3] in all; inflight the in-flight
-- record ("" when none, or for the morgue); v1 is {} or {perform_at,
-- retry_count, error, count, {payload, score, ...}}; state the id's entry
-- of the state hash (stateful queues; "" when none, or for the morgue);
-- timer its timer's fire time ("" when none); mrecord and moverflow, with
-- ARGV[5] = "1", the id's morgue record and the start of its overflow, as
-- record and overflow ("" and {} when it has none, or without ARGV[5]);
-- finished its finished record (retain_finished; "" when none).
--
-- Cost: O(log n + payloads returned).

local C = cold()
local rec_decode, ov_first = C.rec_decode, C.ov_first

local id, ns, npay = ARGV[1], ARGV[2], tonumber(ARGV[3])
local key = K.jobs
if ns == "m" then key = K.morgue end
-- overflow returns the flat start of the overflow of record s in ns.
local function overflow(s, ns)
  local flat = {}
  if s then
    local r = rec_decode(s)
    local want = npay - #r.ps
    if r.ovn > 0 and want > 0 then
      for _, e in ipairs(ov_first(ns, id, want, r.ovh)) do
        flat[#flat + 1] = e[1]
        flat[#flat + 1] = e[2]
        flat[#flat + 1] = e[4] or ""
      end
    end
  end
  return flat
end
local s = redis.call("HGET", key, id)
local flat = overflow(s, ns)
local inflight = ""
if ns == "q" then inflight = redis.call("GET", K.inflight) or "" end
local v1 = {}
if ARGV[4] == "1" then
  local at = redis.call("ZSCORE", K.v1due, id)
  if at then
    local p = KEYS[FIXED_KEYS + 1]
    v1 = {at, redis.call("ZSCORE", K.v1retries, id) or "-1", redis.call("HGET", K.v1errors, id) or "",
      redis.call("ZCARD", p), redis.call("ZRANGE", p, 0, npay - 1, "WITHSCORES")}
  end
end
local state, timer, m, mflat, fin = "", "", false, {}, false
if ns == "q" then
  state = redis.call("HGET", K.state, id) or ""
  timer = redis.call("ZSCORE", K.timers, id) or ""
end
if ns == "q" and ARGV[5] == "1" then
  m = redis.call("HGET", K.morgue, id)
  mflat = overflow(m, "m")
  fin = redis.call("HGET", K.fin, id)
end
return {s or "", flat, inflight, v1, state, timer, m or "", mflat, fin or ""}
