-- finished.lua: the finished records of one shard (docs/contract.md
-- §3.11): trim them by age, or read a page by finished_at. Read only for
-- "page".
-- lib: keys
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] "trim" or "page"
-- For "trim": ARGV[2] the cut-off time (unix seconds; records finished
--   before it go), ARGV[3] the most records deleted.
-- For "page": ARGV[2] "1" for the latest first, ARGV[3] the most records,
--   ARGV[4] min and ARGV[5] max finished_at ("-inf", "+inf" or seconds),
--   ARGV[6] the cursor's id ("" = from the start) and ARGV[7] its
--   finished_at: the page continues after that member (by its rank while
--   it exists, else after its time).
--
-- Returns for "trim" the number of records deleted; for "page" a flat list
-- {id, finished_at, record, ...}.
--
-- Cost: O(log n + records).

local op = ARGV[1]
if op == "trim" then
  local ids = redis.call("ZRANGEBYSCORE", K.fat, "-inf", "(" .. ARGV[2], "LIMIT", 0, tonumber(ARGV[3]))
  if #ids == 0 then return 0 end
  redis.call("ZREM", K.fat, unpack(ids))
  redis.call("HDEL", K.fin, unpack(ids))
  return #ids
end

local rev, limit, lo, hi, cid, cat = ARGV[2] == "1", tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local lon, hin = tonumber(lo) or -math.huge, tonumber(hi) or math.huge
if lo == "-inf" then lon = -math.huge end
if hi == "+inf" then hin = math.huge end
local got
if cid ~= "" then
  local at = redis.call("ZSCORE", K.fat, cid)
  if at and at == cat then
    local r
    if rev then r = redis.call("ZREVRANK", K.fat, cid) else r = redis.call("ZRANK", K.fat, cid) end
    if rev then
      got = redis.call("ZREVRANGE", K.fat, r + 1, r + limit, "WITHSCORES")
    else
      got = redis.call("ZRANGE", K.fat, r + 1, r + limit, "WITHSCORES")
    end
  elseif rev then
    hi = "(" .. cat
  else
    lo = "(" .. cat
  end
end
if not got then
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
