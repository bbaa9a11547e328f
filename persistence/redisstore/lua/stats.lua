-- stats.lua: the metrics of one shard (docs/contract.md §3.10). Read only.
-- lib: keys clock fields
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] "1" to count layout 1's keys too (the store is being upgraded)
--
-- Returns {length, retries, morgue, oldest, busy, processed, failed, now,
-- snoozed, discarded, cancelled, expired}:
-- length counts queued ids, retries those with retry_count >= 0, morgue
-- the morgue's ids, oldest is the earliest due time among queued ids (""
-- when none), busy the ids in flight, processed and failed the counters,
-- now the time the script read, snoozed and discarded the counters of the
-- outcomes handlers chose (docs/contract.md §3.11; 0 when never counted),
-- cancelled the ids a cancel disposed of while in flight (§3.13), expired
-- the payloads discarded at fetch because they expired (§3.15).
--
-- Cost: O(1), plus the stale entries at the head of the fifo.

init_clock(ARGV[1])

local function count_of(rec)
  if not rec or rec == "" then return 0 end
  local v, pos = rdf(rec, 1)
  local n = rdf(rec, pos)
  return tonumber(n) or 0
end

-- count1 reads n from a layout 1 in-flight record ("1:1" then "<len>:<n>").
local function count1(rec)
  if not rec or rec == "" then return 0 end
  local c = string.find(rec, ":", 4, true)
  if not c then return 0 end
  local len = tonumber(string.sub(rec, 4, c - 1))
  if not len then return 0 end
  return tonumber(string.sub(rec, c + 1, c + len)) or 0
end

local oldest = nil
local function consider(at)
  if at and (not oldest or tonumber(at) < tonumber(oldest)) then oldest = at end
end
local els = redis.call("LRANGE", K.fifo, 0, 63)
for _, e in ipairs(els) do
  local c = string.find(e, ":", 1, true)
  local s = redis.call("HGET", K.jobs, string.sub(e, c + 1))
  if s then
    local _, at, _, fseq = rec_head(s)
    if fseq == string.sub(e, 1, c - 1) then
      consider(at)
      break
    end
  end
end
for _, z in ipairs({K.later, K.p2, K.p3, K.p4}) do
  local l = redis.call("ZRANGE", z, 0, 0, "WITHSCORES")
  consider(l[2])
end

local length = redis.call("HLEN", K.jobs)
local retries = redis.call("ZCARD", K.retries)
local morgue = redis.call("HLEN", K.morgue)
local busy = count_of(redis.call("GETRANGE", K.inflight, 0, 63))
local c = redis.call("HMGET", K.meta, "processed", "failed", "snoozed", "discarded", "cancelled", "expired")
local processed, failed = tonumber(c[1] or "0"), tonumber(c[2] or "0")

if ARGV[2] == "1" then
  -- Layout 1 keys still in use: what they hold counts too (an id in both
  -- layouts counts once per layout until it is drained).
  length = length + redis.call("ZCARD", K.v1due)
  retries = retries + redis.call("ZCOUNT", K.v1retries, 0, "+inf")
  morgue = morgue + redis.call("ZCARD", K.v1morgue)
  busy = busy + count1(redis.call("GETRANGE", K.v1inflight, 0, 63))
  local s1 = redis.call("HMGET", K.v1stats, "processed", "failed")
  processed = processed + tonumber(s1[1] or "0")
  failed = failed + tonumber(s1[2] or "0")
  local d1 = redis.call("ZRANGE", K.v1due, 0, 0, "WITHSCORES")
  consider(d1[2])
end

return {length, retries, morgue, oldest or "", busy, processed, failed, NOW,
  tonumber(c[3] or "0"), tonumber(c[4] or "0"), tonumber(c[5] or "0"), tonumber(c[6] or "0")}
