-- advance.lua: settle the owner's in-flight batch and fetch the next one, in
-- one atomic step (docs/contract.md §3.3 to §3.6). Processing a shard costs
-- one call of this script per window.
-- lib: keys fence clock fields stateful batch cold
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1]  now ("" = Redis TIME; set only by the test seam)
-- ARGV[2]  lease token of the caller
-- ARGV[3]  seq of the batch being settled ("0" = none)
-- ARGV[4]  seq for the batch to fetch
-- ARGV[5]  how many ids to fetch ("0" = settle only)
-- ARGV[6]  max_retry_count
-- ARGV[7]  max_payloads_per_call: the most payloads of one id per call
-- ARGV[8]  call timeout in milliseconds ("" = no deadline kept)
-- ARGV[9]  ids per handler call ("0" = the whole window in one call),
--          optionally followed by ":" and the most calls the deadline bound
--          counts (an owner bounds a long window by time, docs/storage.md §4)
-- ARGV[10] "1" to look for layout 1 data (a store written by layout 1)
-- ARGV[11] number of failed ids, then per failed id: id, error, retry_at
--          ("" = now), hold ("" = none: else the id, what is left of it
--          after a move to the morgue and what was queued for it meanwhile
--          are not fetched before it; the call timed out, docs/contract.md
--          §2.1)
-- then the number of skipped ids (not handled: back as they were), the ids
-- then the number of interrupted ids (their call was cut while it ran:
--      back as they were, not fetched before the call's deadline), the ids
-- then "1" for a stateful queue (docs/contract.md §11), else "0"
-- then the number of state writes, then per write: id, "s" (set) or "d"
--      (delete), the state bytes ("" for a delete)
-- then the number of timer writes, then per write: id, "s" (set) or "c"
--      (clear), the fire time ("" for a clear)
-- then the number of emits, then per emit: the id it belongs to and the
--      outbox entry (fld(queue) fld(id) fld(payload) fld(score)
--      fld(perform_at), "" for a default score or time)
-- then "1" to report the outbox's length whatever the call carries (the
--      first call of a new owner, which relays what a previous owner left)
-- then the change feed's length bound ("0" = no feed; stateful queues):
--      each committed state change adds a feed entry to the outbox
--      (feed_put). The first call of an owner ("1" above) also records it
--      in meta's "feed", for the external compare-and-set (state.lua).
-- then, optionally, how long a settled id that conflicts waits before it is
--      fetched again, in microseconds ("0" = at once), then the number of
--      ids with a delay of their own, then per id: id, microseconds (the
--      owner grows an id's delay with its consecutive conflicts,
--      docs/contract.md §11). Missing: every conflicting id at once (the
--      Go side always sends it, "0" and "0" when no delay).
-- then the number of snoozed ids, then per id: id, due time in ms; then the
--      number of dead ids, then per id: id, reason; then the number of
--      discarded ids, then per id: id, reason (the outcomes the handler
--      chose, docs/contract.md §3.11; missing: none). A snoozed id goes
--      back due at its time with its retry count and error unchanged
--      (neither processed nor failed, meta "snoozed" + 1); a dead id's
--      handed payloads go to the morgue with the reason, whatever retries
--      were left, reported in dead (counted as failed); a discarded id's
--      handed payloads are dropped (meta "discarded" + 1). What was queued
--      for the id meanwhile stays queued, in order. Nothing else of the
--      call commits for them (state and timer writes, emits); a timer that
--      brought a snoozed id fires again at its due time, one that brought
--      a dead or discarded id is dropped.
-- then retain_finished in milliseconds ("0" = off: nothing below is read
--      and the settle does nothing more), then the most finished records
--      the shard keeps, then the number of results, then per result: id,
--      bytes (docs/contract.md §3.14)
-- then, optionally, the number of ids with expired payloads, then per id:
--      id, the positions (1-based, comma-separated) in its handed payloads
--      of those that expired before the fetch (docs/contract.md §3.15; the
--      owner judges them by the batch's fetched_at). Missing: none. The
--      settle removes them first, whatever the id's outcome (they never go
--      back, to the morgue or to a handler) and counts them (meta
--      "expired" + n); an id left with no payload that no timer brought
--      was not handed to a handler and settles as nothing more (neither
--      processed nor failed).
--
-- Finished ids (docs/contract.md §3.14): with retain_finished on, each
-- failed attempt of an id adds fld(time) fld(error) to its history
-- (att[id], the last 5; aat[id] = the time), and each acknowledged id gets
-- a finished record (fin[id], fat[id] = finished_at): "\1" fld(finished_at)
-- fld(attempts) fld(last error) fld("1" and the result | "0" and "")
-- fld(history), its history moving there; attempts is its retry count + 2.
-- A record replaces the id's earlier one. Beyond the most records (and
-- histories) kept, the earliest go (at most 1000 per call); the owner
-- trims both by age (finished.lua).
-- A retried call (lost reply) returns before the settle, so it writes no
-- record twice. Off, the settle reads and writes nothing for it.
--
-- Cancel (docs/contract.md §3.13): an id the in-flight record marks as
-- cancelled (its "c" section, written by action.lua's cancel) that did not
-- succeed (failed, skipped, interrupted or conflicting) goes to the morgue
-- with the error "cancelled", or is dropped, per the mark, and counts in
-- meta's "cancelled"; one that succeeded settles as a success. The mark
-- goes with the in-flight record.
--
-- Emits (any queue, docs/contract.md §11): the emits of each id that is
-- acknowledged are appended to the outbox stream (XADD, field "e") in the
-- same step; those of failed, skipped, interrupted, conflicting or
-- restored ids are dropped. The owner relays the outbox afterwards
-- (RelayOutbox). A queue that emits nothing pays nothing for it.
--
-- Stateful queues: the fetch appends to the in-flight record the field "s"
-- and each fetched id's state version ("0" = none), and returns the states.
-- The settle compares, for each id that succeeded, the version handed out
-- with the current one: equal, the id is acknowledged and its state write
-- applied (version + 1; a delete leaves a tombstone at version + 1, so
-- the version never goes back); different (an external
-- compare-and-set won), the id goes back as it was, is neither processed
-- nor failed, and is listed in conflicts. Writes of failed, skipped or
-- interrupted ids are dropped.
--
-- Timers (stateful queues): after the due jobs, the fetch fires due timers
-- (earliest first) while the window has room: an id fetched in this window
-- is flagged as brought by its timer too; an id without a fetched record is
-- handed over with no payload (an id whose queued record is held by a
-- restored call's deadline waits). A fired timer leaves the timers zset;
-- the in-flight record flags the jobs it brought ("t" section), and a job
-- that does not succeed (failed, skipped, interrupted, conflicting, or
-- restored) gets its timer back (at its retry time, hold or now). The
-- settle applies timer writes of the ids that succeeded. next_due accounts
-- for the earliest timer not yet due.
--
-- Returns {batch, more, next_due, dead, processed, failed, restored, v1,
-- conflicts, states, outbox, snoozed, discarded, expired, reshard}:
--   batch     the fetched batch (lib/batch.lua encoding), or "" when none
--   more      "1" when the fetch stopped early, so more may be due
--   next_due  the due time of the earliest queued job not yet due, if the
--             fetch stopped there, else ""
--   dead      what the settlement moved to the morgue (batch encoding), ""
--   processed, failed, restored: counts of ids
--   v1        > 0 when layout 1 keys of the shard still hold data to drain
--   conflicts the settled ids that conflicted (stateful queues), a list
--   states    per job of the batch, its entry of the state hash
--             (fld(version) bytes) or nil; empty unless stateful
--   outbox    the outbox's length when this call carried emits, asked for
--             it or the queue is stateful, else 0
--   snoozed, discarded: counts of the settled ids the handler snoozed
--             and discarded (0 from a retried call)
--   expired   the payloads the settle removed as expired (0 from a
--             retried call)
--   reshard   "" normally; "drain" when a reshard drains the shard and
--             "moved" once it is drained (docs/storage.md section 11): the
--             call settled and fetched nothing (layout 1's lease key holds
--             lib/fence.lua's DRAIN or MOVED)
-- Error reply "LEASE_LOST" when ARGV[2] is not the current lease.
--
-- Idempotence: a call whose seq to fetch is the in-flight record's ran
-- before and its reply was lost: the same batch is returned and nothing
-- changes. A settlement that moved payloads to the morgue keeps its report
-- (the outcome key) until a call with another seq confirms it, so a retried
-- call (settle only, or settle and fetch) reports the same dead payloads.
-- The first call of a new owner also reports the dead payloads of the
-- previous owner's last settlement, which it may not have seen (acquire.lua).
-- Reporting is at least once: a report is confirmed only by the next call.
--
-- Fetch: due jobs by (due time, id), merging the fifo's head with later;
-- then, when the window is not full, the due ids of priority 2, 3 and 4
-- (2:p2..2:p4, each by due time; docs/contract.md §3.16);
-- at most ARGV[7] payloads of one id (the lowest; the rest stay queued as a
-- fresh job at the same perform_at); the window holds at most
-- 2 x max(ARGV[7], ARGV[5]) payloads (its first id always fits; a big id
-- that does not fit waits for the next window while smaller ones are
-- taken). An id that still has an entry in layout 1 is not fetched until
-- its older payloads are drained. A record without overflow is handed over
-- as it is stored, without decoding it.
--
-- Cost: O(ids + payloads) of the settled and the fetched windows; at batch
-- size 1, eleven commands.

init_clock(ARGV[1])
local token, settle_seq, next_seq = ARGV[2], ARGV[3], ARGV[4]
local want, max_retry, maxp = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local timeout = ARGV[8]
local call_size, max_calls = string.match(ARGV[9], "^(%d+):?(%d*)$")
call_size, max_calls = tonumber(call_size), tonumber(max_calls)
local nfail = tonumber(ARGV[11])
local iskip = 12 + 4 * nfail
local nskip = tonumber(ARGV[iskip])
local iint = iskip + 1 + nskip
local nint = tonumber(ARGV[iint])
local ist = iint + 1 + nint
local stateful = ARGV[ist] == "1"
local nsw = tonumber(ARGV[ist + 1] or "0")
local itw = ist + 2 + 3 * nsw
local ntw = tonumber(ARGV[itw] or "0")
local iem = itw + 1 + 3 * ntw
local nem = tonumber(ARGV[iem] or "0")
local first = ARGV[iem + 1 + 2 * nem] == "1"
local look = stateful or nem > 0 or first
local feedmax = ARGV[iem + 2 + 2 * nem] or "0"
if feedmax == "" then feedmax = "0" end
local icd = iem + 3 + 2 * nem

-- The outcomes the handler chose (the trailing section after the conflict
-- delays): snoozes[id] = due time (seconds), deaths[id] and discards[id] =
-- reason; nout counts them.
local snoozes, deaths, discards, nout = {}, {}, {}, 0
local iret = nil -- where the retention section starts
do
  local i = icd
  if ARGV[i] and ARGV[i + 1] then
    i = i + 2 + 2 * tonumber(ARGV[i + 1])
    local function section(t, conv)
      local n = tonumber(ARGV[i] or "0") or 0
      for k = 0, n - 1 do t[ARGV[i + 1 + 2 * k]] = conv(ARGV[i + 2 + 2 * k]) end
      i = i + 1 + 2 * n
      nout = nout + n
    end
    section(snoozes, function(ms) return fmt_us(tonumber(ms) * 1000) end)
    section(deaths, function(r) return r end)
    section(discards, function(r) return r end)
    iret = i
  end
end

-- Retention, the section after the outcomes. Self-contained: reads ARGV
-- only.
local retain_ms, retain_max, results = 0, 0, {}
local iexp = nil -- where the expired section starts
if iret then
  retain_ms = tonumber(ARGV[iret] or "0") or 0
  iexp = iret + 1
  if retain_ms > 0 then
    retain_max = tonumber(ARGV[iret + 1])
    local nres = tonumber(ARGV[iret + 2])
    for j = 0, nres - 1 do results[ARGV[iret + 3 + 2 * j]] = ARGV[iret + 4 + 2 * j] end
    iexp = iret + 3 + 2 * nres
  end
end

-- Expired payloads, the section after retention: expired[id] = set of
-- positions in the id's handed payloads.
local expired, nexp = {}, 0
if iexp and ARGV[iexp] then
  nexp = tonumber(ARGV[iexp]) or 0
  for j = 0, nexp - 1 do
    local set = {}
    for p in string.gmatch(ARGV[iexp + 2 + 2 * j], "%d+") do set[tonumber(p)] = true end
    expired[ARGV[iexp + 1 + 2 * j]] = set
  end
end
local nfin = 0

-- finish keeps the finished record of an acknowledged job, with the
-- history of its failed attempts (only a job that failed has one).
local function finish(job)
  local id = job.id
  local res = results[id]
  local hist = ""
  if tonumber(job.rc) >= 0 then
    hist = redis.call("HGET", K.att, id)
    if hist then
      redis.call("HDEL", K.att, id)
      redis.call("ZREM", K.aat, id)
    else
      hist = ""
    end
  end
  local rec = "\1" .. fld(NOW) .. fld(tostring(tonumber(job.rc) + 2)) .. fld(job.err or "")
  if res then rec = rec .. fld("1") .. fld(res) else rec = rec .. fld("0") .. fld("") end
  redis.call("HSET", K.fin, id, rec .. fld(hist))
  redis.call("ZADD", K.fat, NOW, id)
  nfin = nfin + 1
end

-- attempt adds a failed attempt to the id's history, keeping the last 5.
local natt = 0
local function attempt(id, err)
  local h = redis.call("HGET", K.att, id) or ""
  local es, pos = {}, 1
  while pos <= #h do
    local at, e
    at, pos = rdf(h, pos)
    e, pos = rdf(h, pos)
    es[#es + 1] = fld(at) .. fld(e)
  end
  es[#es + 1] = fld(NOW) .. fld(err)
  local from = math.max(1, #es - 4)
  redis.call("HSET", K.att, id, table.concat(es, "", from))
  redis.call("ZADD", K.aat, NOW, id)
  natt = natt + 1
end

-- conflict_hold returns until when a conflicting id waits, or nil.
local cdelays
local function conflict_hold(id)
  if not ARGV[icd] then return nil end
  if not cdelays then
    cdelays = {}
    for i = 0, tonumber(ARGV[icd + 1]) - 1 do
      cdelays[ARGV[icd + 2 + 2 * i]] = tonumber(ARGV[icd + 3 + 2 * i])
    end
  end
  local us = cdelays[id] or tonumber(ARGV[icd])
  if us <= 0 then return nil end
  return fmt_us(NOW_US + us)
end

-- states_of returns the state hash's entries of ids, in order.
local function states_of(ids)
  if #ids == 0 then return {} end
  return redis.call("HMGET", K.state, unpack(ids))
end

local L = redis.call("MGET", K.lease, K.v1lease, K.inflight, K.outcome)
local reshard = ""
if L[1] ~= token or L[2] ~= FENCE then
  if L[1] ~= token or not fenced(L[2]) then
    return redis.error_reply("LEASE_LOST")
  end
  -- A reshard drains the shard (docs/storage.md section 11): the owner
  -- settles what it holds and fetches nothing more from it.
  if L[2] == DRAIN then reshard = "drain" else reshard = "moved" end
  want = 0
end

if first and stateful then redis.call("HSET", K.meta, "feed", feedmax) end

local v1 = 0
if ARGV[10] == "1" then
  v1 = redis.call("EXISTS", K.v1due, K.v1morgue, K.v1stats, K.v1inflight)
end

-- The last report: fields token, seq, processed, failed, restored, dead.
local o, carry
if L[4] then
  local pos = 1
  o = {}
  o.token, pos = rdf(L[4], pos)
  o.seq, pos = rdf(L[4], pos)
  o.p, pos = rdf(L[4], pos)
  o.f, pos = rdf(L[4], pos)
  o.r, pos = rdf(L[4], pos)
  o.dead, pos = rdf(L[4], pos)
  if o.token == token and o.seq == "carry" then
    -- The previous owner's unconfirmed dead report (acquire.lua): reported
    -- with this call's own.
    carry = o.dead
    o = nil
  elseif o.token ~= token or o.seq ~= next_seq then
    o = nil
  end
end
if L[3] then
  local h = decode_header(L[3])
  if h.token == token and h.seq == next_seq then
    local st = {}
    if stateful then
      local _, jobs = cold().decode_batch(L[3])
      local ids = {}
      for j, job in ipairs(jobs) do ids[j] = job.id end
      st = states_of(ids)
    end
    local ob = 0
    if look then ob = redis.call("XLEN", K.outbox) end
    if o then return {L[3], "0", "", o.dead, tonumber(o.p), tonumber(o.f), tonumber(o.r), v1, {}, st, ob, 0, 0, 0, reshard} end
    return {L[3], "0", "", "", 0, 0, 0, v1, {}, st, ob, 0, 0, 0, reshard}
  end
end
if o then
  local ob = 0
  if look then ob = redis.call("XLEN", K.outbox) end
  return {"", "0", "", o.dead, tonumber(o.p), tonumber(o.f), tonumber(o.r), v1, {}, {}, ob, 0, 0, 0, reshard}
end

-- ---------------------------------------------------------------- settle

local processed, failed, restored, snoozed, discarded, nexpired = 0, 0, 0, 0, 0, 0
local dead_parts, ndead = {}, 0
local conflicts = {}

if L[3] then
  local h = decode_header(L[3])
  if h.token == token and h.seq == settle_seq then
    if nfail == 0 and nskip == 0 and nint == 0 and not stateful and nem == 0 and nout == 0 and retain_ms == 0
        and nexp == 0 then
      processed = h.n
    else
      local _, jobs = cold().decode_batch(L[3])
      local writes, cur, live, twrites = {}, {}, {}, {}
      if stateful then
        for i = 0, nsw - 1 do
          local b = ist + 2 + 3 * i
          writes[ARGV[b]] = {ARGV[b + 1], ARGV[b + 2]}
        end
        for i = 0, ntw - 1 do
          local b = itw + 1 + 3 * i
          twrites[ARGV[b]] = {ARGV[b + 1], ARGV[b + 2]}
        end
        local sids = {}
        for _, job in ipairs(jobs) do
          if job.sv or writes[job.id] then sids[#sids + 1] = job.id end
        end
        local got = states_of(sids)
        for j, id in ipairs(sids) do
          cur[id] = state_ver(got[j])
          live[id] = got[j] and string.byte(got[j], 1) ~= 0
        end
      end
      local emits = {}
      for i = 0, nem - 1 do
        local from = ARGV[iem + 1 + 2 * i]
        local t = emits[from]
        if not t then
          t = {}
          emits[from] = t
        end
        t[#t + 1] = ARGV[iem + 2 + 2 * i]
      end
      local fails, skips, ints = {}, {}, {}
      for i = 0, nfail - 1 do
        local retry_at, fhold = ARGV[14 + 4 * i], ARGV[15 + 4 * i]
        if retry_at == "" then retry_at = NOW end
        if fhold == "" then fhold = nil end
        fails[ARGV[12 + 4 * i]] = {ARGV[13 + 4 * i], retry_at, fhold}
      end
      for i = 1, nskip do skips[ARGV[iskip + i]] = true end
      for i = 1, nint do ints[ARGV[iint + i]] = true end
      local hold = nil
      if nint > 0 then hold = cold().hold_of(h) end
      for _, job in ipairs(jobs) do
        local id = job.id
        local f = fails[id]
        local gone = false
        if expired[id] then
          -- Expired before the fetch: removed whatever the outcome.
          local keep, set = {}, expired[id]
          for i, p in ipairs(job.ps) do
            if set[i] then nexpired = nexpired + 1 else keep[#keep + 1] = p end
          end
          job.ps = keep
          gone = #keep == 0 and not job.tm
        end
        if gone then
          -- Nothing of it was handed to a handler, nothing is left of it
          -- (nor for a cancel mark to dispose of).
        elseif job.cx and (f or skips[id] or ints[id] or snoozes[id] or deaths[id] or discards[id]
            or (job.sv and cur[id] ~= job.sv)) then
          -- Cancelled while in flight and not succeeded (an outcome the
          -- handler chose is not a success either): disposed of per the
          -- cancel's mode, neither failed nor restored (a success stays
          -- one). docs/contract.md §3.13.
          cold().cancel_dispose(job)
        elseif skips[id] or ints[id] then
          local hj = nil
          if ints[id] then hj = hold end
          cold().requeue_job(job, job.rc, job.at, job.err, hj, nil)
          restored = restored + 1
        elseif snoozes[id] then
          -- Put off: back due at its time, as it was otherwise; its timer
          -- (if it brought it) fires again then.
          local due = snoozes[id]
          cold().requeue_job(job, job.rc, due, job.err, nil, due)
          snoozed = snoozed + 1
        elseif deaths[id] then
          -- Dead now: every payload it was handed goes to the morgue, its
          -- timer firing is dropped.
          failed = failed + 1
          if retain_ms > 0 then attempt(id, deaths[id]) end
          if #job.ps > 0 then
            cold().morgue_put(id, job.ps, deaths[id], NOW)
            cold().put_job(dead_parts, id, tostring(tonumber(job.rc) + 1), job.at, deaths[id], job.ps)
            ndead = ndead + 1
          end
        elseif discards[id] then
          -- Dropped: neither queued again nor buried; its timer firing is
          -- dropped too.
          discarded = discarded + 1
        elseif not f then
          if job.sv and cur[id] ~= job.sv then
            -- The state changed while the id was in flight: nothing of this
            -- call commits for it; it goes back as it was, held for the
            -- owner's conflict delay.
            cold().requeue_job(job, job.rc, job.at, job.err, conflict_hold(id), nil)
            conflicts[#conflicts + 1] = id
          else
            processed = processed + 1
            local w = writes[id]
            if w and w[1] == "d" then
              -- A delete leaves a tombstone: the version keeps counting,
              -- so a compare-and-set holding an older version fails.
              if live[id] then
                local nv = tostring(tonumber(cur[id]) + 1)
                redis.call("HSET", K.state, id, state_tomb(nv))
                if feedmax ~= "0" then feed_put(id, nv, "d", "", feedmax) end
              end
            elseif w then
              local nv = tostring(tonumber(cur[id]) + 1)
              redis.call("HSET", K.state, id, fld(nv) .. w[2])
              if feedmax ~= "0" then feed_put(id, nv, "s", w[2], feedmax) end
            end
            local tw = twrites[id]
            if tw and tw[1] == "c" then
              redis.call("ZREM", K.timers, id)
            elseif tw then
              redis.call("ZADD", K.timers, tw[2], id)
            end
            local em = emits[id]
            if em then
              for _, e in ipairs(em) do redis.call("XADD", K.outbox, "*", "e", e) end
            end
            if retain_ms > 0 then finish(job) end
          end
        else
          failed = failed + 1
          if retain_ms > 0 then attempt(id, f[1]) end
          local rc = tonumber(job.rc) + 1
          if #job.ps == 0 then
            -- Only its timer brought it: the timer fires again at the
            -- retry time (no payload to retry or to bury).
            cold().requeue_job(job, job.rc, job.at, job.err, f[3], f[2])
          elseif rc >= max_retry then
            if job.tm then cold().requeue_job({id = id, ps = {}, tm = true}, "-1", NOW, "", f[3], nil) end
            -- The lowest-scored payload of what the handler was given dies;
            -- the rest goes back as a fresh job, due now.
            local d = {job.ps[1]}
            cold().morgue_put(id, d, f[1], NOW)
            cold().put_job(dead_parts, id, tostring(rc), job.at, f[1], d)
            ndead = ndead + 1
            if #job.ps > 1 then
              local rest = {}
              for i = 2, #job.ps do rest[#rest + 1] = job.ps[i] end
              cold().requeue(id, rest, "-1", NOW, "", f[3], job.pri)
            elseif f[3] then
              cold().hold_queued(id, f[3])
            end
          else
            cold().requeue_job(job, tostring(rc), f[2], f[1], f[3], f[2])
          end
        end
      end
      if failed > 0 then redis.call("HINCRBY", K.meta, "failed", failed) end
      if snoozed > 0 then redis.call("HINCRBY", K.meta, "snoozed", snoozed) end
      if discarded > 0 then redis.call("HINCRBY", K.meta, "discarded", discarded) end
      if nexpired > 0 then redis.call("HINCRBY", K.meta, "expired", nexpired) end
    end
    if processed > 0 then redis.call("HINCRBY", K.meta, "processed", processed) end
    -- The bounds: the earliest finished records and histories go first.
    for _, b in ipairs({{nfin, K.fat, K.fin}, {natt, K.aat, K.att}}) do
      if b[1] > 0 and retain_max > 0 then
        local over = math.min(redis.call("ZCARD", b[2]) - retain_max, 1000)
        if over > 0 then
          local gone = redis.call("ZPOPMIN", b[2], over)
          local ids = {}
          for j = 1, #gone, 2 do ids[#ids + 1] = gone[j] end
          hdel_list(b[3], ids)
        end
      end
    end
  else
    restored = cold().restore_inflight(L[3])
  end
end

if carry then
  local h, pos = decode_header(carry)
  dead_parts[#dead_parts + 1] = string.sub(carry, pos)
  ndead = ndead + h.n
end
local dead = ""
if ndead > 0 then dead = encode_batch(ndead, token, settle_seq, NOW, "", "", dead_parts) end

-- ---------------------------------------------------------------- fetch

local parts, n, pay, more, next_due = {}, 0, 0, "0", ""
local fetched, states = {}, {}
if want > 0 then
  local budget = 2 * math.max(maxp, want)
  local over = false
  local v1chk = v1 > 0 and redis.call("EXISTS", K.v1due) == 1
  local whole = maxp >= INLINE_MAX -- a record without overflow fits a call
  local taken = {}
  local del_jobs, del_later, del_retries = {}, {}, {}
  -- Read one entry more than wanted from the fifo and from later (most
  -- entries are valid and due); a fifo with stale entries is read further
  -- in bigger chunks.
  local chunk = want + 1

  -- The fifo, read in chunks from index base; fi is the next entry of fel
  -- to look at; consumed counts the leading entries taken, moved or found
  -- stale (trimmed at the end). fifo_head returns the first valid entry:
  -- {id, record, at, rc}.
  local fel, fi, base, consumed, fend = {}, 1, 0, 0, false
  local fids, frecs = {}, {}
  local function fifo_head()
    while true do
      if fi > #fel then
        if fend then return nil end
        base = base + #fel
        local size = chunk
        if base > 0 then size = chunk + 32 end
        fel = redis.call("LRANGE", K.fifo, base, base + size - 1)
        fi = 1
        if #fel < size then fend = true end
        if #fel == 0 then return nil end
        fids = {}
        for j, e in ipairs(fel) do fids[j] = string.sub(e, string.find(e, ":", 1, true) + 1) end
        frecs = redis.call("HMGET", K.jobs, unpack(fids))
      end
      local s = frecs[fi]
      if s then
        local e = fel[fi]
        local _, at, rc, fseq = rec_head(s)
        if fseq == string.sub(e, 1, string.find(e, ":", 1, true) - 1) then return {fids[fi], s, at, rc} end
      end
      fi = fi + 1
      consumed = consumed + 1
    end
  end

  -- consider takes queued id (record s, nil when gone; infifo: its fifo
  -- entry was read) into the window; dz collects the ids to remove from the
  -- zset the id was read from.
  local function consider(id, s, infifo, dz)
    local flags
    if s then flags = string.byte(s, 1) end
    if s and v1chk and redis.call("ZSCORE", K.v1due, id) then
      -- Older payloads of this id are still in layout 1: drained first.
      if infifo then
        local r = cold().rec_decode(s)
        r.fseq = nil
        cold().store(id, r, r.rc)
      end
      s = nil
    end
    if s and whole and flags % 8 < 4 then
      -- No overflow: the whole record is one call's worth.
      local _, _, rc = rec_head(s)
      put_raw(parts, id, s)
      n = n + 1
      fetched[n] = id
      pay = pay + 1
      taken[id] = true
      del_jobs[#del_jobs + 1] = id
      if not infifo then dz[#dz + 1] = id end
      if rc ~= "-1" then del_retries[#del_retries + 1] = id end
    elseif s then
      local r = cold().rec_decode(s)
      if n > 0 and pay + math.min(#r.ps + r.ovn, maxp) > budget then
        -- The window is full for this big id: it waits for the next one
        -- (smaller ids still fit).
        over = true
        if infifo then
          r.fseq = nil
          cold().store(id, r, r.rc)
        end
      else
        local rc, at, err = r.rc, r.at, r.err
        local got = cold().take_payloads("q", id, r, maxp)
        cold().put_job(parts, id, rc, at, err, got, r.pri)
        n = n + 1
        fetched[n] = id
        pay = pay + #got
        taken[id] = true
        if #r.ps == 0 and r.ovn == 0 then
          del_jobs[#del_jobs + 1] = id
          if not r.fseq then dz[#dz + 1] = id end
          if tonumber(rc) >= 0 then del_retries[#del_retries + 1] = id end
        else
          -- The rest of a big id stays queued as a fresh job.
          r.rc, r.err, r.hold, r.fseq = "-1", "", nil, nil
          cold().store(id, r, rc)
        end
      end
    end
  end

  local lat = redis.call("ZRANGEBYSCORE", K.later, "-inf", NOW, "WITHSCORES", "LIMIT", 0, chunk)
  local lrecs = {}
  if #lat > 0 then
    local lids = {}
    for j = 1, #lat, 2 do lids[#lids + 1] = lat[j] end
    local got = redis.call("HMGET", K.jobs, unpack(lids))
    for j, id in ipairs(lids) do lrecs[id] = got[j] or false end
  end
  local li = 1
  local fh = nil
  local scanned, limit = 0, want * 4 + 64

  while n < want and pay < budget and scanned < limit do
    scanned = scanned + 1
    if not fh then fh = fifo_head() end
    local lc = nil
    if li <= #lat then lc = lat[li] end
    if not fh and not lc then
      if #lat == chunk then over = true end -- later may hold more due jobs
      break
    end
    local use_fifo
    if fh and lc then
      local fa, la = tonumber(fh[3]), tonumber(lat[li + 1])
      use_fifo = fa < la or (fa == la and bcmp(fh[1], lc) < 0)
    else
      use_fifo = fh ~= nil
    end
    local id, s, infifo
    if use_fifo then
      if tonumber(fh[3]) > NOWN then
        next_due = fh[3]
        break
      end
      id, s, infifo = fh[1], fh[2], true
      fh = nil
      fi = fi + 1
      consumed = consumed + 1
    else
      id = lc
      li = li + 2
      if not taken[id] then
        s = lrecs[id]
        if not s then
          s = nil
          redis.call("ZREM", K.later, id)
        end
      end
    end
    consider(id, s, infifo, del_later)
  end
  -- Then the due ids of priority 2, 3 and 4, in that order, each by (due
  -- time, id) (docs/contract.md §3.16). A shard that never used priorities
  -- pays one EXISTS, and only for a window that is not full.
  local pkeys = nil
  if n < want and pay < budget and not over and scanned < limit
    and redis.call("EXISTS", K.p2, K.p3, K.p4) > 0 then
    pkeys = {K.p2, K.p3, K.p4}
  end
  local del_p = pkeys and {{}, {}, {}}
  for pk = 1, pkeys and 3 or 0 do
    if n >= want or pay >= budget or over or scanned >= limit then break end
    local key = pkeys[pk]
    local lim = want - n + 1
    local due = redis.call("ZRANGEBYSCORE", key, "-inf", NOW, "LIMIT", 0, lim)
    if #due > 0 then
      local recs = redis.call("HMGET", K.jobs, unpack(due))
      for j, id in ipairs(due) do
        if n >= want or pay >= budget or scanned >= limit then break end
        scanned = scanned + 1
        if not taken[id] and not recs[j] then
          del_p[pk][#del_p[pk] + 1] = id
        elseif not taken[id] then
          consider(id, recs[j], false, del_p[pk])
        end
      end
      if #due == lim then over = true end -- it may hold more due ids
    end
  end
  hdel_list(K.jobs, del_jobs)
  local function zrem(key, ids)
    for i = 1, #ids, CHUNK do redis.call("ZREM", key, unpack(ids, i, math.min(i + CHUNK - 1, #ids))) end
  end
  zrem(K.later, del_later)
  zrem(K.retries, del_retries)
  for pk = 1, pkeys and 3 or 0 do zrem(pkeys[pk], del_p[pk]) end
  if consumed > 0 then redis.call("LTRIM", K.fifo, consumed, -1) end
  local tmark, ntm = {}, 0
  if stateful and n < want and pay < budget then
    -- Due timers, earliest first.
    local due = redis.call("ZRANGEBYSCORE", K.timers, "-inf", NOW, "WITHSCORES", "LIMIT", 0, want - n + 1)
    for j = 1, #due, 2 do
      local id = due[j]
      if taken[id] then
        redis.call("ZREM", K.timers, id)
        tmark[id] = true
        ntm = ntm + 1
      elseif n >= want then
        more = "1"
        break
      else
        local held = false
        local s = redis.call("HGET", K.jobs, id)
        if s then
          local r = cold().rec_decode(s)
          held = r.hold ~= nil and tonumber(r.hold) > NOWN
        end
        if not held then
          redis.call("ZREM", K.timers, id)
          cold().put_job(parts, id, "-1", due[j + 1], "", {})
          n = n + 1
          fetched[n] = id
          taken[id] = true
          tmark[id] = true
          ntm = ntm + 1
        end
      end
    end
  end
  if stateful and n > 0 then
    -- Each id's state with its payloads; the versions handed out go into
    -- the in-flight record for the settle.
    local got = states_of(fetched)
    local vs = {fld("s")}
    for j = 1, n do
      states[j] = got[j]
      vs[j + 1] = fld(state_ver(got[j]))
    end
    parts[#parts + 1] = table.concat(vs)
    if ntm > 0 then
      local ts = {fld("t")}
      for j = 1, n do
        if tmark[fetched[j]] then ts[j + 1] = fld("1") else ts[j + 1] = fld("") end
      end
      parts[#parts + 1] = table.concat(ts)
    end
  end
  if n == want or pay >= budget or over or scanned >= limit then
    more = "1"
  elseif next_due == "" then
    local nd = redis.call("ZRANGEBYSCORE", K.later, "(" .. NOW, "+inf", "WITHSCORES", "LIMIT", 0, 1)
    if #nd > 0 then next_due = nd[2] end
    for pk = 1, pkeys and 3 or 0 do
      local pd = redis.call("ZRANGEBYSCORE", pkeys[pk], "(" .. NOW, "+inf", "WITHSCORES", "LIMIT", 0, 1)
      if #pd > 0 and (next_due == "" or tonumber(pd[2]) < tonumber(next_due)) then next_due = pd[2] end
    end
  end
  if stateful and more ~= "1" then
    local nt = redis.call("ZRANGEBYSCORE", K.timers, "(" .. NOW, "+inf", "WITHSCORES", "LIMIT", 0, 1)
    if #nt > 0 and (next_due == "" or tonumber(nt[2]) < tonumber(next_due)) then next_due = nt[2] end
  end
end

local batch = ""
if n > 0 then
  local bound, tms = "", ""
  if timeout ~= "" then
    local calls = 1
    if call_size > 0 then calls = math.ceil(n / call_size) end
    if max_calls and max_calls > 0 and calls > max_calls then calls = max_calls end
    tms = timeout
    bound = fmt_us(NOW_US + calls * tonumber(timeout) * 1000)
  end
  batch = encode_batch(n, token, next_seq, NOW, bound, tms, parts)
  redis.call("SET", K.inflight, batch)
elseif L[3] then
  redis.call("DEL", K.inflight)
end

if ndead > 0 then
  redis.call("SET", K.outcome, fld(token) .. fld(next_seq) .. fld(tostring(processed)) ..
    fld(tostring(failed)) .. fld(tostring(restored)) .. fld(dead))
elseif L[4] then
  redis.call("DEL", K.outcome)
end

local ob = 0
if look then ob = redis.call("XLEN", K.outbox) end

return {batch, more, next_due, dead, processed, failed, restored, v1, conflicts, states, ob, snoozed, discarded,
  nexpired, reshard}
