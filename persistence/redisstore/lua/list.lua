-- list.lua: one page of a shard's queued jobs or morgue entries, in the
-- order of one of its indexes, continuing after a cursor. The caller merges
-- the pages of all shards. Cost is O(log n + limit) whatever the size of the
-- shard, also when many entries share one score (a cursor inside a band of
-- equal scores is found by binary search on ranks).
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] view: "queue" or "morgue"
-- ARGV[3] order: "id", "perform_at", "retry_count" (queue) or "updated_at"
--         (morgue)
-- ARGV[4] "1" for descending order
-- ARGV[5] min bound, inclusive ("" = none): a number, or an id for "id"
-- ARGV[6] max bound, inclusive ("" = none)
-- ARGV[7] limit
-- ARGV[8] "1" when a cursor follows
-- ARGV[9] cursor score (as returned in a previous page; "0" for "id")
-- ARGV[10] cursor id
-- ARGV[11] how many payloads to return per entry
--
-- Returns a list of entries, each {id, sort_score, time, retry_count, error,
-- payload_count, {payload, score, ...}}: time is perform_at (queue) or
-- updated_at (morgue); retry_count is "" for the morgue.

local view, order, rev = ARGV[2], ARGV[3], ARGV[4] == "1"
local min, max, limit = ARGV[5], ARGV[6], tonumber(ARGV[7])
local has_cursor, cs, cm = ARGV[8] == "1", ARGV[9], ARGV[10]
local npay = tonumber(ARGV[11])

-- Byte-wise comparison; Lua's < on strings follows the server's locale.
local function bytes_lt(a, b)
  local la, lb = #a, #b
  local n = la < lb and la or lb
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return la < lb
end

local function member_at(key, rank)
  return redis.call("ZRANGE", key, rank, rank)[1]
end

-- first_after returns the rank of the first element of key after (or, with
-- inclusive, at or after) the position (score s, member m).
local function first_after(key, s, m, inclusive)
  local lo = redis.call("ZCOUNT", key, "-inf", "(" .. s)
  local hi = redis.call("ZCOUNT", key, "-inf", s)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local x = member_at(key, mid)
    local before
    if inclusive then before = bytes_lt(x, m) else before = not bytes_lt(m, x) end
    if before then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- page_scored returns up to limit {member, score} pairs of a zset ordered by
-- (score, member), within [min, max], strictly after the cursor.
local function page_scored(key)
  local out = {}
  if not rev then
    local start
    if has_cursor and (min == "" or tonumber(cs) >= tonumber(min)) then
      start = first_after(key, cs, cm, false)
    elseif min ~= "" then
      start = redis.call("ZCOUNT", key, "-inf", "(" .. min)
    else
      start = 0
    end
    local r = redis.call("ZRANGE", key, start, start + limit - 1, "WITHSCORES")
    for i = 1, #r, 2 do
      if max ~= "" and tonumber(r[i + 1]) > tonumber(max) then break end
      out[#out + 1] = {r[i], r[i + 1]}
    end
  else
    local last
    if has_cursor and (max == "" or tonumber(cs) <= tonumber(max)) then
      last = first_after(key, cs, cm, true) - 1
    elseif max ~= "" then
      last = redis.call("ZCOUNT", key, "-inf", max) - 1
    else
      last = redis.call("ZCARD", key) - 1
    end
    if last < 0 then return out end
    local first = math.max(0, last - limit + 1)
    local r = redis.call("ZRANGE", key, first, last, "WITHSCORES")
    for i = #r - 1, 1, -2 do
      if min ~= "" and tonumber(r[i + 1]) < tonumber(min) then break end
      out[#out + 1] = {r[i], r[i + 1]}
    end
  end
  return out
end

-- page_lex does the same for an index whose scores are all 0.
local function page_lex(key)
  local r
  if not rev then
    local lower = "-"
    if min ~= "" then lower = "[" .. min end
    if has_cursor and (min == "" or not bytes_lt(cm, min)) then lower = "(" .. cm end
    local upper = "+"
    if max ~= "" then upper = "[" .. max end
    r = redis.call("ZRANGEBYLEX", key, lower, upper, "LIMIT", 0, limit)
  else
    local upper = "+"
    if max ~= "" then upper = "[" .. max end
    if has_cursor and (max == "" or not bytes_lt(max, cm)) then upper = "(" .. cm end
    local lower = "-"
    if min ~= "" then lower = "[" .. min end
    r = redis.call("ZREVRANGEBYLEX", key, upper, lower, "LIMIT", 0, limit)
  end
  local out = {}
  for i = 1, #r do out[i] = {r[i], "0"} end
  return out
end

local page
if order == "id" then
  if view == "queue" then page = page_lex(K.ids) else page = page_lex(K.morgue_ids) end
elseif order == "perform_at" then
  page = page_scored(K.due)
elseif order == "retry_count" then
  page = page_scored(K.retries)
else
  page = page_scored(K.morgue)
end

local out = {}
for _, e in ipairs(page) do
  local id = e[1]
  if view == "queue" then
    local at = redis.call("ZSCORE", K.due, id)
    if at then
      local rc = redis.call("ZSCORE", K.retries, id) or "-1"
      local err = redis.call("HGET", K.errors, id) or ""
      local count = redis.call("ZCARD", pkey(id))
      local flat = {}
      if npay > 0 then flat = redis.call("ZRANGE", pkey(id), 0, npay - 1, "WITHSCORES") end
      out[#out + 1] = {id, e[2], at, rc, err, count, flat}
    end
  else
    local at = redis.call("ZSCORE", K.morgue, id)
    if at then
      local err = redis.call("HGET", K.morgue_errors, id) or ""
      local count = redis.call("ZCARD", mkey(id))
      local flat = {}
      if npay > 0 then flat = redis.call("ZRANGE", mkey(id), 0, npay - 1, "WITHSCORES") end
      out[#out + 1] = {id, e[2], at, "", err, count, flat}
    end
  end
end
return out
