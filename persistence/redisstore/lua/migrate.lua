-- migrate.lua: move one bounded chunk of a shard's layout 1 data into
-- layout 2 (docs/storage.md section 8). The shard's owner drains it; an
-- action, lookup or listing moves what it is about to act on first, with no
-- lease, once the shard is fenced (catchup.go).
-- lib: keys clock fields fence lease cold
--
-- KEYS: the shard key set (lib/keys.lua); for "queue" and "morgue", KEYS[35..]
-- are layout 1's per-id keys ("p:<id>" or "m:<id>") of the ids, in order.
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] lease token of the caller, or "" for a caller with no lease
--         (an action: "queue", "morgue" and "stats" only), which needs the
--         shard fenced: no node of the previous release may serve it
-- ARGV[3] operation:
--         "queue": move the queued jobs named from ARGV[5] on
--         "morgue": move the morgue entries named from ARGV[5] on
--         "stats": add layout 1's counters to layout 2's
--         "inflight": restore the next chunk of the in-flight record a
--         layout 1 owner left (its position is kept in meta.v1io)
-- ARGV[4] most payloads moved per id ("inflight": per call)
--
-- A layout 1 job meets a layout 2 job of the same id as "queued job + new
-- job": the layout 1 job is the older one, so its perform_at, retry count
-- and error stay; payloads unite, the lower score winning. A morgue entry
-- merges the same way (the later updated_at and its error win).
--
-- Returns {moved, partial}: moved counts the ids (or in-flight jobs) moved
-- completely, partial those with payloads left for another call (for
-- "inflight": 1 while the record is not restored completely). Error reply
-- "LEASE_LOST" when ARGV[2] is not the current lease; "NOT_FENCED" when
-- ARGV[2] is "" and layout 1's lease key does not hold the fence (or the
-- operation is "inflight", the owner's alone).
--
-- Cost: O(ids + payloads moved).

local C = cold()
local new_rec, add_payloads, load, store, requeue, morgue_put = C.new_rec, C.add_payloads, C.load, C.store, C.requeue, C.morgue_put

local op, maxp = ARGV[3], tonumber(ARGV[4])
if ARGV[2] == "" then
  -- Moving a fenced shard's layout 1 entry is what its owner's drain does,
  -- one atomic step per id, so anyone may do it; fetches skip an id until
  -- its layout 1 entry is gone, whoever moves it.
  if op == "inflight" or redis.call("GET", K.v1lease) ~= FENCE then return redis.error_reply("NOT_FENCED") end
elseif not lease_ok(ARGV[2]) then
  return redis.error_reply("LEASE_LOST")
end
init_clock(ARGV[1])

local function pairs_of(flat)
  local ps = {}
  for i = 1, #flat, 2 do ps[#ps + 1] = {flat[i + 1], flat[i]} end
  return ps
end

if op == "stats" then
  local s = redis.call("HMGET", K.v1stats, "processed", "failed")
  if s[1] then redis.call("HINCRBY", K.meta, "processed", s[1]) end
  if s[2] then redis.call("HINCRBY", K.meta, "failed", s[2]) end
  redis.call("DEL", K.v1stats)
  return {0, 0}
end

local moved, partial = 0, 0

if op == "queue" then
  for i = 5, #ARGV do
    local id = ARGV[i]
    local p = KEYS[FIXED_KEYS + i - 4]
    local at = redis.call("ZSCORE", K.v1due, id)
    if at then
      local rc = redis.call("ZSCORE", K.v1retries, id) or "-1"
      local err = redis.call("HGET", K.v1errors, id) or ""
      local flat = redis.call("ZRANGE", p, 0, maxp - 1, "WITHSCORES")
      if #flat > 0 then
        local r = load(id)
        local old_rc
        if r then old_rc = r.rc else r = new_rec(at, rc) end
        add_payloads("q", id, r, pairs_of(flat))
        r.at, r.rc, r.fseq = at, rc, nil
        if tonumber(rc) >= 0 then r.err = err else r.err = "" end
        store(id, r, old_rc)
        redis.call("ZREMRANGEBYRANK", p, 0, #flat / 2 - 1)
      end
      if redis.call("EXISTS", p) == 0 then
        redis.call("ZREM", K.v1due, id)
        redis.call("ZREM", K.v1ids, id)
        redis.call("ZREM", K.v1retries, id)
        redis.call("HDEL", K.v1errors, id)
        moved = moved + 1
      else
        partial = partial + 1
      end
    end
  end
  return {moved, partial}
end

if op == "morgue" then
  for i = 5, #ARGV do
    local id = ARGV[i]
    local m = KEYS[FIXED_KEYS + i - 4]
    local up = redis.call("ZSCORE", K.v1morgue, id)
    if up then
      local err = redis.call("HGET", K.v1morgue_errors, id) or ""
      local flat = redis.call("ZRANGE", m, 0, maxp - 1, "WITHSCORES")
      if #flat > 0 then
        morgue_put(id, pairs_of(flat), err, up)
        redis.call("ZREMRANGEBYRANK", m, 0, #flat / 2 - 1)
      end
      if redis.call("EXISTS", m) == 0 then
        redis.call("ZREM", K.v1morgue, id)
        redis.call("ZREM", K.v1morgue_ids, id)
        redis.call("HDEL", K.v1morgue_errors, id)
        moved = moved + 1
      else
        partial = partial + 1
      end
    end
  end
  return {moved, partial}
end

-- "inflight": layout 1's record is "<len>:<bytes>" fields: "1", n, token,
-- seq, fetched_at, then per job id, retry_count, perform_at, error, np and
-- np fields alternating payload and score. It is read from a saved offset
-- with GETRANGE, so that a huge record is restored over many calls.
if redis.call("EXISTS", K.v1inflight) == 0 then
  redis.call("HDEL", K.meta, "v1io")
  return {0, 0}
end
local buf, bpos, boff = "", 1, 0
local function need(n)
  if #buf - bpos + 1 < n then
    local at = boff + bpos - 1
    buf = redis.call("GETRANGE", K.v1inflight, at, at + math.max(n, 65536) - 1)
    boff, bpos = at, 1
  end
end
local function v1field()
  need(24)
  local c = string.find(buf, ":", bpos, true)
  local len = tonumber(string.sub(buf, bpos, c - 1))
  bpos = c + 1
  need(len)
  local s = string.sub(buf, bpos, bpos + len - 1)
  bpos = bpos + len
  return s
end

-- State: offset, jobs left, and the job being restored (id, rc, at, err,
-- payloads left) if one is cut.
local st = redis.call("HGET", K.meta, "v1io")
local left, cur
if st then
  local pos = 1
  local off, l
  off, pos = rdf(st, pos)
  l, pos = rdf(st, pos)
  boff, left = tonumber(off), tonumber(l)
  if pos <= #st then
    cur = {}
    cur.id, pos = rdf(st, pos)
    cur.rc, pos = rdf(st, pos)
    cur.at, pos = rdf(st, pos)
    cur.err, pos = rdf(st, pos)
    local n
    n, pos = rdf(st, pos)
    cur.left = tonumber(n)
  end
else
  v1field()
  left = tonumber(v1field())
  v1field(); v1field(); v1field()
end

local budget = maxp
while budget > 0 and (cur or left > 0) do
  if not cur then
    cur = {}
    cur.id = v1field()
    cur.rc = v1field()
    cur.at = v1field()
    cur.err = v1field()
    cur.left = tonumber(v1field()) / 2
    left = left - 1
  end
  local ps = {}
  while cur.left > 0 and budget > 0 do
    local d = v1field()
    local sc = v1field()
    ps[#ps + 1] = {sc, d}
    cur.left = cur.left - 1
    budget = budget - 1
  end
  if #ps > 0 then requeue(cur.id, ps, cur.rc, cur.at, cur.err, nil) end
  if cur.left == 0 then
    moved = moved + 1
    cur = nil
  end
end
if not cur and left == 0 then
  redis.call("DEL", K.v1inflight)
  redis.call("HDEL", K.meta, "v1io")
  return {moved, 0}
end
local s = fld(string.format("%.0f", boff + bpos - 1)) .. fld(tostring(left))
if cur then
  s = s .. fld(cur.id) .. fld(cur.rc) .. fld(cur.at) .. fld(cur.err) .. fld(tostring(cur.left))
end
redis.call("HSET", K.meta, "v1io", s)
return {moved, 1}
