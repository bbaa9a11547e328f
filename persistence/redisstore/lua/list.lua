-- list.lua: one page of a shard's queued jobs by due time (the fifo,
-- later and 2:p2..2:p4, merged), of its failed jobs by retry count, or of its morgue by
-- updated_at, continuing after a cursor. The client merges the pages of all
-- shards. Read only. (The listings by id read scan.lua.)
-- lib: keys fields cold
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] view: "perform_at", "retries" (retry_count >= 0) or "updated_at"
-- ARGV[2] "1" for descending order
-- ARGV[3] min bound on the sort key, inclusive ("" = none)
-- ARGV[4] max bound, inclusive ("" = none)
-- ARGV[5] limit
-- ARGV[6] "1" when a cursor follows
-- ARGV[7] cursor sort key
-- ARGV[8] cursor id
-- ARGV[9] how many payloads to return per entry
--
-- Returns a list of rows {id, sort key, record, overflow}: record is the
-- job's (or morgue entry's) record, overflow a flat list {score, payload,
-- headers, ...} of payloads that follow the inline ones, up to ARGV[9] in
-- all (headers "" for none).
--
-- Cost: O(log n + limit) for the zsets, also through long bands of equal
-- scores (the cursor is found by binary search on ranks); the fifo is
-- searched by binary search on positions, each probe skipping stale
-- entries.

local C = cold()
local rec_decode, ov_first = C.rec_decode, C.ov_first

local view, rev = ARGV[1], ARGV[2] == "1"
local min, max, limit = ARGV[3], ARGV[4], tonumber(ARGV[5])
local has_cursor, cs, cm = ARGV[6] == "1", ARGV[7], ARGV[8]
local npay = tonumber(ARGV[9])

local function member_at(key, rank)
  return redis.call("ZRANGE", key, rank, rank)[1]
end

-- rank_after returns the rank of the first element of key after (or, with
-- inclusive, at or after) the position (score s, member m).
local function rank_after(key, s, m, inclusive)
  local lo = redis.call("ZCOUNT", key, "-inf", "(" .. s)
  local hi = redis.call("ZCOUNT", key, "-inf", s)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local c = bcmp(member_at(key, mid), m)
    local before
    if inclusive then before = c < 0 else before = c <= 0 end
    if before then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- page_scored returns up to limit {member, score} of a zset ordered by
-- (score, member), within [min, max], strictly after the cursor.
local function page_scored(key)
  local out = {}
  if not rev then
    local start
    if has_cursor and (min == "" or tonumber(cs) >= tonumber(min)) then
      start = rank_after(key, cs, cm, false)
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
      last = rank_after(key, cs, cm, true) - 1
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

-- The fifo: entries in (perform_at, id) order, some of them stale.
local flen = 0
if view == "perform_at" then flen = redis.call("LLEN", K.fifo) end

-- valid returns the nearest valid fifo entry from index i on, forward
-- (dir 1) or backward (dir -1): its index, id, perform_at and record.
local function valid(i, dir)
  while i >= 0 and i < flen do
    local a, b
    if dir == 1 then a, b = i, math.min(i + 31, flen - 1) else a, b = math.max(i - 31, 0), i end
    local els = redis.call("LRANGE", K.fifo, a, b)
    local from, to, step = 1, #els, 1
    if dir == -1 then from, to, step = #els, 1, -1 end
    for j = from, to, step do
      local e = els[j]
      local c = string.find(e, ":", 1, true)
      local id = string.sub(e, c + 1)
      local s = redis.call("HGET", K.jobs, id)
      if s then
        local _, at, _, fseq = rec_head(s)
        if fseq == string.sub(e, 1, c - 1) then return a + j - 1, id, at, s end
      end
    end
    if dir == 1 then i = b + 1 else i = a - 1 end
  end
  return nil
end

-- first_true returns the first fifo index from which the next valid entry
-- satisfies pred (monotone along the fifo), or flen.
local function first_true(pred)
  local lo, hi = 0, flen
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local idx, id, at = valid(mid, 1)
    if not idx or idx >= hi or pred(at, id) then
      hi = mid
    else
      lo = idx + 1
    end
  end
  return lo
end

local function cmp_pos(at, id, s, m)
  local x, y = tonumber(at), tonumber(s)
  if x ~= y then
    if x < y then return -1 end
    return 1
  end
  return bcmp(id, m)
end

-- page_fifo returns up to limit {id, perform_at, record} of the fifo.
local function page_fifo()
  local out = {}
  if flen == 0 then return out end
  if not rev then
    local start = 0
    if has_cursor and (min == "" or tonumber(cs) >= tonumber(min)) then
      start = first_true(function(at, id) return cmp_pos(at, id, cs, cm) > 0 end)
    elseif min ~= "" then
      start = first_true(function(at) return tonumber(at) >= tonumber(min) end)
    end
    local i = start
    while #out < limit do
      local idx, id, at, s = valid(i, 1)
      if not idx or (max ~= "" and tonumber(at) > tonumber(max)) then break end
      out[#out + 1] = {id, at, s}
      i = idx + 1
    end
  else
    local stop = flen
    if has_cursor and (max == "" or tonumber(cs) <= tonumber(max)) then
      stop = first_true(function(at, id) return cmp_pos(at, id, cs, cm) >= 0 end)
    elseif max ~= "" then
      stop = first_true(function(at) return tonumber(at) > tonumber(max) end)
    end
    local i = stop - 1
    while #out < limit do
      local idx, id, at, s = valid(i, -1)
      if not idx or (min ~= "" and tonumber(at) < tonumber(min)) then break end
      out[#out + 1] = {id, at, s}
      i = idx - 1
    end
  end
  return out
end

local function overflow(ns, id, rec)
  local r = rec_decode(rec)
  local flat = {}
  local want = npay - #r.ps
  if r.ovn > 0 and want > 0 then
    for _, e in ipairs(ov_first(ns, id, want, r.ovh)) do
      flat[#flat + 1] = e[1]
      flat[#flat + 1] = e[2]
      flat[#flat + 1] = e[4] or ""
    end
  end
  return flat
end

local rows = {}
if view == "updated_at" then
  for _, e in ipairs(page_scored(K.mat)) do
    local s = redis.call("HGET", K.morgue, e[1])
    if s then rows[#rows + 1] = {e[1], e[2], s, overflow("m", e[1], s)} end
  end
  return rows
end
if view == "retries" then
  for _, e in ipairs(page_scored(K.retries)) do
    local s = redis.call("HGET", K.jobs, e[1])
    if s then rows[#rows + 1] = {e[1], e[2], s, overflow("q", e[1], s)} end
  end
  return rows
end

-- perform_at: merge the fifo's page with the pages of later and, when
-- they exist, of 2:p2..2:p4 (ids of priority 2 to 4, docs/contract.md
-- §3.16), by (sort key, id).
local srcs = {page_fifo()}
local zs = {K.later}
if redis.call("EXISTS", K.p2, K.p3, K.p4) > 0 then zs = {K.later, K.p2, K.p3, K.p4} end
for _, z in ipairs(zs) do
  local b = {}
  for _, e in ipairs(page_scored(z)) do
    local s = redis.call("HGET", K.jobs, e[1])
    if s then b[#b + 1] = {e[1], e[2], s} end
  end
  srcs[#srcs + 1] = b
end
local at = {}
for k = 1, #srcs do at[k] = 1 end
while #rows < limit do
  local best = nil
  for k = 1, #srcs do
    local e = srcs[k][at[k]]
    if e then
      if not best then
        best = k
      else
        local o = srcs[best][at[best]]
        local c = cmp_pos(e[2], e[1], o[2], o[1])
        if (rev and c > 0) or (not rev and c < 0) then best = k end
      end
    end
  end
  if not best then break end
  local e = srcs[best][at[best]]
  at[best] = at[best] + 1
  rows[#rows + 1] = {e[1], e[2], e[3], overflow("q", e[1], e[3])}
end
return rows
