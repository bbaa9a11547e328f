-- import.lua: merge the part of a drained shard's export entry (drain.lua)
-- that belongs to this shard of the queue's new generation
-- (docs/storage.md section 11). Needs no lease: like an enqueue, it only
-- adds to the shard, and its owner fetches what it brings.
-- lib: keys clock fields notify stateful cold
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] the source: "<generation>/<shard>" of the drained shard
-- ARGV[3] the entry's seq
-- ARGV[4] notification channel (lib/notify.lua)
-- ARGV[5] this shard's number (the notification message)
-- ARGV[6..] the items, each three values: kind, id, data (drain.lua)
--
-- An entry whose seq is not after the source's import mark (meta
-- "imp:<source>") was imported before: nothing changes, so the drained
-- shard's owner may send it again after a lost reply. Else each item is
-- merged as its kind says, and the mark moves:
--   "j" a queued job: payloads united with the id's queued record (the
--       lower score wins for an equal payload); a new record keeps the
--       exported perform_at, retry count, error, hold and priority, an
--       existing one its own (the most urgent priority, the later hold)
--   "m" a morgue entry, merged the same way (the later updated_at keeps
--       its error)
--   "s" a state: written unless the shard holds a higher version
--   "t" a timer: set unless the id has one here
--   "f" a finished record: kept unless this shard's is as recent
--   "a" an attempt history: kept unless the id has one here
--   "d" a dedup key: its window end, the later one winning
--   "c" counters: added to this shard's
--   "k" marks: tick:* and hw keep the larger number
--
-- Returns the number of items merged (0 for an entry imported before).
-- Publishes the shard number when a job came.
--
-- Cost: O(items + payloads).

init_clock(ARGV[1])
local mark = "imp:" .. ARGV[2]
local last = tonumber(redis.call("HGET", K.meta, mark) or "0")
if tonumber(ARGV[3]) <= last then return 0 end
local C = cold()

local function num_max(f, x)
  local cur = redis.call("HGET", K.meta, f)
  if not cur or tonumber(x) > tonumber(cur) then redis.call("HSET", K.meta, f, x) end
end

-- pairs_of reads fld(name) fld(value) pairs.
local function pairs_of(data)
  local out, pos = {}, 1
  while pos <= #data do
    local f, x
    f, pos = rdf(data, pos)
    x, pos = rdf(data, pos)
    out[#out + 1] = {f, x}
  end
  return out
end

local function import_job(id, data)
  local e = C.rec_decode(data)
  local r = C.load(id)
  if r then
    local old_rc = r.rc
    C.add_payloads("q", id, r, e.ps)
    if e.pri < r.pri then r.pri, r.fseq = e.pri, nil end
    local h = C.later_hold(r.hold, e.hold)
    if h ~= r.hold then r.hold, r.fseq = h, nil end
    C.store(id, r, old_rc)
    return
  end
  if #e.ps <= INLINE_MAX and C.inline_bytes(e.ps) <= INLINE_BYTES then
    -- A new id whose payloads fit inline (most): stored as it came,
    -- outside the fifo.
    e.fseq, e.pri0, e.fseq0 = nil, nil, nil
    C.store(id, e, nil)
    return
  end
  r = C.new_rec(e.at, e.rc)
  r.err, r.hold, r.pri = e.err, e.hold, e.pri
  C.add_payloads("q", id, r, e.ps)
  C.store(id, r, nil)
end

local function import_morgue(id, data)
  local e = C.rec_decode(data)
  local s = redis.call("HGET", K.morgue, id)
  local m
  if s then
    m = C.rec_decode(s)
    if tonumber(e.at) >= tonumber(m.at) then m.at, m.err = e.at, e.err end
  else
    m = C.new_rec(e.at, e.rc)
    m.err = e.err
  end
  C.add_payloads("m", id, m, e.ps)
  redis.call("HSET", K.morgue, id, C.rec_encode(m))
  redis.call("ZADD", K.mat, m.at, id)
end

local jobs, merged = 0, 0
for i = 6, #ARGV, 3 do
  local kind, id, data = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  merged = merged + 1
  if kind == "j" then
    import_job(id, data)
    jobs = jobs + 1
  elseif kind == "m" then
    import_morgue(id, data)
  elseif kind == "s" then
    local cur = redis.call("HGET", K.state, id)
    if not cur or tonumber(state_ver(data)) > tonumber(state_ver(cur)) then
      redis.call("HSET", K.state, id, data)
    end
  elseif kind == "t" then
    redis.call("ZADD", K.timers, "NX", data, id)
  elseif kind == "f" then
    local at, pos = rdf(data, 1)
    local cur = redis.call("ZSCORE", K.fat, id)
    if not cur or tonumber(at) > tonumber(cur) then
      redis.call("HSET", K.fin, id, string.sub(data, pos))
      redis.call("ZADD", K.fat, at, id)
    end
  elseif kind == "a" then
    local at, pos = rdf(data, 1)
    if redis.call("HSETNX", K.att, id, string.sub(data, pos)) == 1 and at ~= "" then
      redis.call("ZADD", K.aat, at, id)
    end
  elseif kind == "d" then
    local at, pos = rdf(data, 1)
    redis.call("ZADD", K.dedup, "GT", at, fld(id) .. string.sub(data, pos))
    local ttl = math.floor((tonumber(at) - NOWN) * 1000) + 1000
    if ttl > redis.call("PTTL", K.dedup) then redis.call("PEXPIRE", K.dedup, ttl) end
  elseif kind == "c" then
    for _, p in ipairs(pairs_of(data)) do redis.call("HINCRBY", K.meta, p[1], p[2]) end
  elseif kind == "k" then
    for _, p in ipairs(pairs_of(data)) do num_max(p[1], p[2]) end
  end
end
redis.call("HSET", K.meta, mark, ARGV[3])
if jobs > 0 then notify(ARGV[4], ARGV[5]) end
return merged
