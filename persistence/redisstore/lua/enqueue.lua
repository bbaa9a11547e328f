-- enqueue.lua: add jobs to one shard, merging with queued jobs of the same id
-- as "new job + queued job" (docs/contract.md §3.2 case 1): payloads united,
-- the lower score wins for an equal payload, a queued job keeps its
-- perform_at, retry count and error. An id in flight gets a fresh queued
-- entry.
-- lib: keys fence clock notify fields cold
--
-- KEYS: the shard key set (lib/keys.lua); with ARGV[2] = "1", KEYS[35..] are
-- layout 1's payload keys "p:<id>" of the jobs, one per job, in order.
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] "2": write layout 2. "1": the store is being upgraded; a shard
--         not fenced yet may be served by a layout 1 node, so the jobs go
--         to layout 1's keys (docs/storage.md section 8)
-- ARGV[3] notification channel (lib/notify.lua: the queue's channel, or the
--         shard's shard channel under sharded pub/sub)
-- ARGV[4] shard number (the notification message), optionally followed by
--         "/" and the generation the caller routed the jobs by
--         (docs/storage.md section 11): then the script checks the shard's
--         meta first, and answers the error "SEALED" while the shard is
--         sealed, or "RESHARDED" when it is drained or of another
--         generation (meta "gen", absent: 1), writing nothing
-- ARGV[5..] per job four values: id, payload, score ("" = default),
--         perform_at ("" = now); when ARGV[2] ends with "h" (some job of
--         the call carries headers), five: a fifth, the payload's headers
--         as the node encodes them ("" = none; docs/contract.md §10).
--         Layout 1 keeps no headers.
-- When ARGV[2] ends with "d" (after any "h"; some job of the call carries a
--         dedup key), each job has one more value, last: its dedup key
--         ("" = none). With the queue's window on (meta "dw", ms), a job
--         whose key was seen with its id within the window is a
--         duplicate and is not written (docs/contract.md §3.12).
-- When ARGV[2] ends with "p" (after any "h" and "d"; some job of the call
--         has a priority other than 1), each job has one more value, last:
--         its priority "1".."4" ("" = 1; docs/contract.md §3.16). A new id
--         of priority p >= 2 goes to 2:p<p> (not to the fifo or later); a
--         queued id whose priority becomes more urgent moves (out of the
--         fifo by clearing its in-fifo flag, which makes its fifo entry a
--         tombstone). A less urgent payload does not demote an id. Layout 1
--         keeps no priority.
-- With ARGV[2] = "2t" or "1t" (a periodic tick, one job), two more values
-- follow the job: the periodic job's name and the tick (ms since the
-- epoch); the job is written only if the tick is later than the last one
-- written for that name on this shard (meta field "tick:<name>"), else the
-- script returns 0 and changes nothing.
--
-- With ARGV[2] = "2r" or "1r" (the outbox relay, outbox.go), after the jobs
-- comes the source shard ("<queue>/<shard>"), then one value per job: the
-- outbox entry id it comes from (a stream id). A job whose entry is not
-- after the source's relay mark on this shard (meta field
-- "relay:<source>") was written by an earlier relay and is skipped; the
-- mark moves to the last entry written, in the same step. A relay that
-- failed after its enqueue (its WAIT fell short, its outbox trim failed)
-- therefore hands no emit to the target twice when it runs again (issue
-- #30), and a failover that undoes the enqueue undoes the mark with it.
--
-- Default scores: the k-th unscored payload of an id in this call scores
-- base + k microseconds, where base is now, made strictly greater than the
-- last default score of the shard (meta.hw): unscored payloads keep the
-- order in which they reached Redis.
--
-- A new job due now that sorts after the fifo's tail is appended to the
-- fifo; any other new job goes to later.
--
-- Returns the number of jobs written (duplicates and relayed jobs skipped
-- are not counted). Publishes the shard number, unless nothing was written.
--
-- Cost: HMGET, HSET, RPUSH, ZADD (later) and two meta commands per call,
-- plus HGET/ZADD/HSET per payload that goes to an id's overflow; a relay
-- adds one HGET and at most one HSET of the meta. A call with dedup keys
-- adds HGET (the window), and with the window on ZRANGEBYSCORE, ZMSCORE,
-- ZADD and PEXPIRE (ZREM when lapsed keys are trimmed); a call without
-- keys pays nothing for it. New ids of priority 2 to 4 add one ZADD per
-- priority, a promotion a ZREM, ZADD and HSET; a call without priorities pays nothing
-- for them.

init_clock(ARGV[1])
local mode, channel = ARGV[2], ARGV[3]
local shard, egen = string.match(ARGV[4], "^([^/]*)/?(.*)$")
-- The shard's meta, read first: the reshard check below comes before any
-- write.
local m = redis.call("HMGET", K.meta, "hw", "fseq", "tat", "tid", "gen", "xs")
if egen ~= "" then
  -- docs/storage.md section 11: a sealed shard takes nothing for a moment;
  -- a drained one, or one of another generation, sends the caller to the
  -- id's shard of the queue's current shape.
  if m[6] == "s" then return redis.error_reply("SEALED the shard is being resharded") end
  if m[6] == "m" or (m[5] or "1") ~= egen then
    return redis.error_reply("RESHARDED the shard is no longer the id's")
  end
end
local FIRST = 5
local nargs = #ARGV
local W = 4 -- values per job
local dedup, hdrs, prio = false, false, false
if string.sub(mode, -1) == "p" then
  W, prio = W + 1, true
  mode = string.sub(mode, 1, -2)
end
if string.sub(mode, -1) == "d" then
  W, dedup = W + 1, true
  mode = string.sub(mode, 1, -2)
end
if string.sub(mode, -1) == "h" then
  W, hdrs = W + 1, true
  mode = string.sub(mode, 1, -2)
end
if string.sub(mode, 2, 2) == "t" then
  -- A periodic tick: written only if it moves the job's last tick on this
  -- shard forward, in the same step, so each tick is enqueued once
  -- (docs/contract.md §9).
  local field, tick = "tick:" .. ARGV[nargs - 1], tonumber(ARGV[nargs])
  local last = tonumber(redis.call("HGET", K.meta, field))
  if last and last >= tick then return 0 end
  redis.call("HSET", K.meta, field, ARGV[nargs])
  mode = string.sub(mode, 1, 1)
  nargs = nargs - 2
end
-- after reports whether stream id a comes after stream id b.
local function after(a, b)
  local ams, aseq = string.match(a, "^(%d+)-(%d+)$")
  local bms, bseq = string.match(b, "^(%d+)-(%d+)$")
  ams, bms = tonumber(ams), tonumber(bms)
  return ams > bms or (ams == bms and tonumber(aseq) > tonumber(bseq))
end
local skip, skipped, rfield, rlast, rtop = {}, 0, nil, nil, nil
if string.sub(mode, 2, 2) == "r" then
  local n = (nargs - FIRST) / (W + 1)
  local marks = nargs - n -- ARGV[marks + k] is the k-th job's entry
  rfield = "relay:" .. ARGV[marks]
  rlast = redis.call("HGET", K.meta, rfield)
  rtop = rlast
  local k = 0
  for i = FIRST, marks - 1, W do
    k = k + 1
    local e = ARGV[marks + k]
    if rlast and not after(e, rlast) then
      skip[i], skipped = true, skipped + 1
    elseif not rtop or after(e, rtop) then
      rtop = e
    end
  end
  nargs = marks - 1
  mode = string.sub(mode, 1, 1)
  if rtop ~= rlast then redis.call("HSET", K.meta, rfield, rtop) end
  if skipped == n then return 0 end
end
if dedup then
  -- The deduplication window (docs/contract.md §3.12): the window is the
  -- meta's "dw" (ms, written by RegisterQueue); off ("0" or absent), the
  -- keys are ignored. A key seen with the same id within the window is a
  -- duplicate: its job is acknowledged and not written. K.dedup maps each
  -- fld(id) .. key to the end of
  -- its window; each call trims a bounded number of lapsed keys, and the
  -- key expires a window after its last write.
  local dw = tonumber(redis.call("HGET", K.meta, "dw") or "0")
  if dw > 0 then
    local keys, at, seen = {}, {}, {}
    for i = FIRST, nargs, W do
      local key = ARGV[i + (hdrs and 5 or 4)]
      if not skip[i] and key ~= "" then
        keys[#keys + 1] = fld(ARGV[i]) .. key -- scoped to the id
        at[#at + 1] = i
      end
    end
    if #keys > 0 then
      local old = redis.call("ZRANGEBYSCORE", K.dedup, "-inf", NOW, "LIMIT", 0, math.min(#keys, CHUNK) + 16)
      if #old > 0 then redis.call("ZREM", K.dedup, unpack(old)) end
      local ends = {}
      for i = 1, #keys, CHUNK do
        local part = redis.call("ZMSCORE", K.dedup, unpack(keys, i, math.min(i + CHUNK - 1, #keys)))
        for j = 1, #part do ends[i + j - 1] = part[j] end
      end
      local until_s = fmt_us(NOW_US + dw * 1000)
      local add = {}
      for j, key in ipairs(keys) do
        if seen[key] or (ends[j] and tonumber(ends[j]) > NOWN) then
          skip[at[j]], skipped = true, skipped + 1
        else
          seen[key] = true
          add[#add + 1] = until_s
          add[#add + 1] = key
        end
      end
      if #add > 0 then
        for i = 1, #add, CHUNK * 2 do
          redis.call("ZADD", K.dedup, unpack(add, i, math.min(i + CHUNK * 2 - 1, #add)))
        end
        redis.call("PEXPIRE", K.dedup, dw + 1000)
      end
    end
  end
end
local njobs = (nargs - FIRST + 1) / W - skipped
if njobs == 0 then return 0 end

local hw = tonumber(m[1] or "0")
local base = NOW_US
if base <= hw then base = hw + 1 end
local base_s = NOW
if base ~= NOW_US then base_s = fmt_us(base) end
local maxk = -1

-- score returns the score of job i: its own, or the next default one of
-- its id (k counts the id's unscored payloads in this call).
local function score(i, k)
  local sc = ARGV[i + 2]
  if sc ~= "" then return sc, k end
  if k > maxk then maxk = k end
  if k == 0 then return base_s, 1 end
  return fmt_us(base + k), k + 1
end

if mode == "1" and redis.call("GET", K.v1lease) ~= FENCE then
  -- Layout 1, as a layout 1 node writes it: payloads with ZADD LT, the
  -- indexes with NX.
  local j = 0
  local ks = {}
  for i = FIRST, nargs, W do
    j = j + 1
    if not skip[i] then
      local id = ARGV[i]
      local sc
      sc, ks[id] = score(i, ks[id] or 0)
      local at = ARGV[i + 3]
      if at == "" then at = NOW end
      redis.call("ZADD", KEYS[FIXED_KEYS + j], "LT", sc, ARGV[i + 1])
      redis.call("ZADD", K.v1due, "NX", at, id)
      redis.call("ZADD", K.v1ids, "NX", 0, id)
      redis.call("ZADD", K.v1retries, "NX", -1, id)
    end
  end
  if maxk >= 0 then redis.call("HSET", K.meta, "hw", string.format("%.0f", base + maxk)) end
  notify(channel, shard)
  return njobs
end

-- Group the jobs by id, in order of first appearance.
local order, byid = {}, {}
for i = FIRST, nargs, W do
  local id = ARGV[i]
  local g = byid[id]
  if not skip[i] then
    if not g then
      g = {}
      byid[id] = g
      order[#order + 1] = id
    end
    g[#g + 1] = i
  end
end

-- pri_of returns the priority of job i (1..4).
local function pri_of(i)
  if not prio then return 1 end
  return tonumber(ARGV[i + W - 1]) or 1
end

local cur = {}
for i = 1, #order, CHUNK do
  local part = redis.call("HMGET", K.jobs, unpack(order, i, math.min(i + CHUNK - 1, #order)))
  for j, v in ipairs(part) do cur[i + j - 1] = v end
end

local fseq = tonumber(m[2] or "0")
local tat, tid = m[3], m[4]
local tatn = tat and tonumber(tat)
local tail_ours = false -- the fifo's tail was appended by this call
local hset, push, later = {}, {}, {}
local padd = {nil, {}, {}, {}} -- new ids of priority 2..4: due, id, ...

for j, id in ipairs(order) do
  local g = byid[id]
  local rec
  if not cur[j] and #g == 1 and (not hdrs or ARGV[g[1] + 4] == "") and pri_of(g[1]) == 1 then
    -- The common case: a new id with one payload.
    local i = g[1]
    local sc = score(i, 0)
    local at = ARGV[i + 3]
    if at == "" then at = NOW end
    local atn = at == NOW and NOWN or tonumber(at)
    -- The client sends each call's jobs sorted by id, so within a call only
    -- the first tie with the fifo's tail needs comparing ids.
    if atn <= NOWN and (not tatn or atn > tatn or (atn == tatn and (tail_ours or bcmp(id, tid) >= 0))) then
      fseq = fseq + 1
      local fs = tostring(fseq)
      push[#push + 1] = fs .. ":" .. id
      tat, tatn, tid, tail_ours = at, atn, id, true
      if sc == at then sc = "" end
      rec = "\2" .. fld(at) .. "\2-1" .. fld(fs) .. fld(sc) .. fld(ARGV[i + 1])
    else
      later[#later + 1] = at
      later[#later + 1] = id
      if sc == at then sc = "" end
      rec = "\0" .. fld(at) .. "\2-1" .. fld(sc) .. fld(ARGV[i + 1])
    end
  else
    local r
    if cur[j] then r = cold().rec_decode(cur[j]) end
    local new = r == nil
    local k = 0
    local list = {}
    local pmin = 4
    for _, i in ipairs(g) do
      local p = pri_of(i)
      if p < pmin then pmin = p end
      local sc
      sc, k = score(i, k)
      if not r then
        local at = ARGV[i + 3]
        if at == "" then at = NOW end
        r = cold().new_rec(at, "-1")
      end
      local h
      if hdrs and ARGV[i + 4] ~= "" then h = ARGV[i + 4] end
      list[#list + 1] = {sc, ARGV[i + 1], h}
    end
    cold().add_payloads("q", id, r, list)
    if new then r.pri = pmin end
    if not new and pmin < r.pri then
      -- More urgent: the id moves to the index of its new priority.
      r.pri, r.fseq = pmin, nil
      cold().store(id, r, r.rc)
    elseif new and pmin > 1 then
      local z = padd[pmin]
      z[#z + 1] = r.at
      z[#z + 1] = id
    elseif new then
      local atn = tonumber(r.at)
      if atn <= NOWN and (not tatn or atn > tatn or (atn == tatn and (tail_ours or bcmp(id, tid) >= 0))) then
        fseq = fseq + 1
        r.fseq = tostring(fseq)
        push[#push + 1] = r.fseq .. ":" .. id
        tat, tatn, tid, tail_ours = r.at, atn, id, true
      else
        later[#later + 1] = r.at
        later[#later + 1] = id
      end
    end
    rec = cold().rec_encode(r)
  end
  hset[#hset + 1] = id
  hset[#hset + 1] = rec
end

for i = 1, #hset, CHUNK * 2 do
  redis.call("HSET", K.jobs, unpack(hset, i, math.min(i + CHUNK * 2 - 1, #hset)))
end
for i = 1, #push, CHUNK do
  redis.call("RPUSH", K.fifo, unpack(push, i, math.min(i + CHUNK - 1, #push)))
end
for p = 1, 4 do
  local z, key = later, K.later
  if p > 1 then z, key = padd[p], PKEY[p] end
  for i = 1, #z, CHUNK * 2 do
    redis.call("ZADD", key, unpack(z, i, math.min(i + CHUNK * 2 - 1, #z)))
  end
end
local meta = {}
if #push > 0 then
  meta = {"fseq", tostring(fseq), "tat", tat, "tid", tid}
end
if maxk >= 0 then
  meta[#meta + 1] = "hw"
  meta[#meta + 1] = string.format("%.0f", base + maxk)
end
if #meta > 0 then redis.call("HSET", K.meta, unpack(meta)) end
notify(channel, shard)
return njobs
