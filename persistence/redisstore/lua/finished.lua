-- finished.lua: the finished records of one shard (docs/contract.md
-- §3.14): trim them by age, or read a page by finished_at. Read only for
-- "page".
-- lib: keys fields
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] "trim" or "page"
-- For "trim": ARGV[2] the cut-off time (unix seconds; records finished
--   before it go, and the attempt histories of ids whose last failed
--   attempt was before it), ARGV[3] the most records (and histories)
--   deleted.
-- For "page": ARGV[2] "1" for the latest first, ARGV[3] the most records,
--   ARGV[4] min and ARGV[5] max finished_at ("-inf", "+inf" or seconds),
--   ARGV[6] the cursor's id ("" = from the start) and ARGV[7] its
--   finished_at: the page continues after that (finished_at, id), ids
--   compared byte by byte, whether the member still exists or not.
--   ARGV[8] "id" orders by id instead (ARGV[2] "1": descending): then
--   ARGV[4] and ARGV[5] bound the ids ("" = none), ARGV[7] is unused, and
--   the page reads every finished id of the shard (at most max_finished).
--
-- Returns for "trim" the number of records deleted (histories not counted); for "page" a flat list
-- {id, finished_at, record, ...}.
--
-- Cost: O(log n + records + records finished at the cursor's time); by id
-- O(n log n), n <= max_finished.

local op = ARGV[1]
if op == "trim" then
  local n = 0
  for _, k in ipairs({{K.fat, K.fin}, {K.aat, K.att}}) do
    local ids = redis.call("ZRANGEBYSCORE", k[1], "-inf", "(" .. ARGV[2], "LIMIT", 0, tonumber(ARGV[3]))
    if #ids > 0 then
      redis.call("ZREM", k[1], unpack(ids))
      redis.call("HDEL", k[2], unpack(ids))
      if k[1] == K.fat then n = #ids end
    end
  end
  return n
end

local rev, limit, lo, hi, cid, cat = ARGV[2] == "1", tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if ARGV[8] == "id" then
  -- By id: every finished id of the shard (at most max_finished), those
  -- within the bounds and after the cursor, sorted.
  local keep = {}
  for _, id in ipairs(redis.call("HKEYS", K.fin)) do
    if (lo == "" or bcmp(id, lo) >= 0) and (hi == "" or bcmp(id, hi) <= 0) and
       (cid == "" or (rev and bcmp(id, cid) < 0) or (not rev and bcmp(id, cid) > 0)) then
      keep[#keep + 1] = id
    end
  end
  if rev then
    table.sort(keep, function(a, b) return bcmp(a, b) > 0 end)
  else
    table.sort(keep, function(a, b) return bcmp(a, b) < 0 end)
  end
  local out = {}
  for j = 1, math.min(limit, #keep) do
    out[#out + 1] = keep[j]
    out[#out + 1] = redis.call("ZSCORE", K.fat, keep[j]) or "0"
    out[#out + 1] = redis.call("HGET", K.fin, keep[j])
  end
  return out
end
local lon, hin = tonumber(lo) or -math.huge, tonumber(hi) or math.huge
if lo == "-inf" then lon = -math.huge end
if hi == "+inf" then hin = math.huge end
local got
if cid ~= "" then
  -- Continue after (cat, cid) in (finished_at, id) order, whether the
  -- cursor's member is still there or not: its rank is the members before
  -- its time plus those of its time (a settle's, bounded by a window)
  -- up to it.
  local k = 0
  for _, m in ipairs(redis.call("ZRANGEBYSCORE", K.fat, cat, cat)) do
    local c = bcmp(m, cid)
    if (rev and c >= 0) or (not rev and c <= 0) then k = k + 1 end
  end
  if rev then
    local r = redis.call("ZCOUNT", K.fat, "(" .. cat, "+inf") + k
    got = redis.call("ZREVRANGE", K.fat, r, r + limit - 1, "WITHSCORES")
  else
    local r = redis.call("ZCOUNT", K.fat, "-inf", "(" .. cat) + k
    got = redis.call("ZRANGE", K.fat, r, r + limit - 1, "WITHSCORES")
  end
else
  if rev then
    got = redis.call("ZREVRANGEBYSCORE", K.fat, hi, lo, "WITHSCORES", "LIMIT", 0, limit)
  else
    got = redis.call("ZRANGEBYSCORE", K.fat, lo, hi, "WITHSCORES", "LIMIT", 0, limit)
  end
end
local out = {}
for j = 1, #got, 2 do
  local sc = tonumber(got[j + 1])
  -- A page continued by rank keeps to the bounds.
  if sc >= lon and sc <= hin then
    local rec = redis.call("HGET", K.fin, got[j])
    if rec then
      out[#out + 1] = got[j]
      out[#out + 1] = got[j + 1]
      out[#out + 1] = rec
    end
  end
end
return out
