-- action.lua: the queue actions of one shard (docs/contract.md §3.9), each
-- bounded so that a large queue, or an id with many payloads, is handled in
-- several calls.
-- lib: keys clock notify cold guard
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; the client passes the first call's time to
--         the next calls of one action)
-- ARGV[2] action: "perform_now", "kill_failed", "delete_failed", or one
--         id's: "delete", "perform_now_id", "kill_id" or "cancel"
-- ARGV[3] limit (ids per call), or for the actions of one id the id
-- ARGV[4] notification channel (lib/notify.lua: the queue's channel, or the
--         shard's shard channel under sharded pub/sub)
-- ARGV[5] shard number (the notification message)
-- ARGV[6] most payloads of one id moved or deleted per call
-- ARGV[7] perform_now: how many held entries earlier calls passed over;
--         cancel: the mode, "k" (to the morgue) or "d" (dropped)
--
-- perform_now sets perform_at = now for up to limit queued jobs due later
-- (in later, then in 2:p2..2:p4: they keep their priority);
-- an id held by a restored call's deadline keeps waiting for it.
-- kill_failed moves up to limit queued jobs with retry_count >= 0 to the
-- morgue with their payloads and error; delete_failed deletes them; delete
-- deletes the queued entry of one id (an in-flight one is untouched).
-- perform_now_id makes the queued entry of one id due now (its retry count
-- and error kept; a hold of a restored call still applies); kill_id moves
-- up to ARGV[6] of its queued payloads per call to the morgue, with its
-- last error ("killed" for a job that never failed). Neither touches an
-- in-flight batch of the id (docs/contract.md §3.9).
--
-- cancel (docs/contract.md §3.13) does what kill_id ("k", with the error
-- "cancelled") or delete ("d") does to the queued entry of the id (ARGV[3])
-- and, when the id is in the
-- shard's in-flight record, marks it there as cancelled with the mode
-- (cold.lua's cancel_mark: the settle or a restore disposes of it) and,
-- once nothing is left queued, publishes "cx:<shard>:<id>" on ARGV[4] so
-- that the node running the call cancels it. It returns two more values:
-- the payloads killed or deleted by this call, and 1 when the id was
-- marked in flight.
--
-- Returns {done, seen, partial, held, now}: done counts ids changed
-- completely, seen the ids looked at, partial the ids left with payloads
-- for another call, held the ids perform_now left waiting for a hold.
-- The action is finished on a shard when seen < limit and partial is 0.
--
-- Error reply "RESHARDING" or "RESHARDED" when a reshard drains, or
-- drained, the shard (lib/guard.lua): nothing changes.
--
-- Cost: O(limit + payloads moved), payloads moved <= ARGV[6] per id.

local C = cold()
local take_payloads, drop_overflow, load, store, unlink, morgue_put = C.take_payloads, C.drop_overflow, C.load, C.store, C.unlink, C.morgue_put

init_clock(ARGV[1])
local action = ARGV[2]
do
  local refused = reshard_guard()
  if refused then return refused end
end
local maxp = tonumber(ARGV[6])

if action == "delete" then
  local id = ARGV[3]
  local r = load(id)
  if not r then return {0, 0, 0, 0, NOW} end
  if drop_overflow("q", id, r, maxp) > 0 then
    store(id, r, r.rc)
    return {0, 1, 1, 0, NOW}
  end
  unlink(id, r)
  return {1, 1, 0, 0, NOW}
end

if action == "perform_now_id" then
  local id = ARGV[3]
  local r = load(id)
  if not r then return {0, 0, 0, 0, NOW} end
  local held = 0
  if not r.fseq and tonumber(r.at) > NOWN then
    r.at = NOW
    store(id, r, r.rc)
    notify(ARGV[4], ARGV[5])
  end
  if r.hold and tonumber(r.hold) > NOWN then held = 1 end
  return {1, 1, 0, held, NOW}
end

if action == "kill_id" then
  local id = ARGV[3]
  local r = load(id)
  if not r then return {0, 0, 0, 0, NOW} end
  local err = r.err
  if err == "" then err = "killed" end
  local got = take_payloads("q", id, r, maxp)
  morgue_put(id, got, err, NOW)
  if #r.ps + r.ovn > 0 then
    store(id, r, r.rc)
    return {0, 1, 1, 0, NOW}
  end
  unlink(id, r)
  return {1, 1, 0, 0, NOW}
end

if action == "cancel" then
  local id, mode = ARGV[3], ARGV[7]
  local seen, done, partial, moved, marked = 0, 0, 0, 0, 0
  local r = load(id)
  if r then
    seen = 1
    local left
    if mode == "k" then
      local got = take_payloads("q", id, r, maxp)
      morgue_put(id, got, "cancelled", NOW)
      moved, left = #got, #r.ps + r.ovn
    else
      local before = #r.ps + r.ovn
      left = drop_overflow("q", id, r, maxp)
      if left > 0 then moved = before - #r.ps - left else moved = before end
    end
    if left > 0 then
      store(id, r, r.rc)
      partial = 1
    else
      unlink(id, r)
      done = 1
    end
  end
  local cur = redis.call("GET", K.inflight)
  if cur and C.cancel_mark(cur, id, mode) then marked = 1 end
  if marked == 1 and partial == 0 then notify(ARGV[4], "cx:" .. ARGV[5] .. ":" .. id) end
  return {done, seen, partial, 0, NOW, moved, marked}
end

local limit = tonumber(ARGV[3])
local done, partial, held = 0, 0, 0

if action == "perform_now" then
  -- later, then 2:p2..2:p4 (ids of priority 2 to 4 stay in theirs), read
  -- as one sequence: ARGV[7] held entries of it were passed over before.
  local skip = tonumber(ARGV[7])
  local seen = 0
  local function perform(z, sk, lim)
    local list = redis.call("ZRANGEBYSCORE", z, "(" .. NOW, "+inf", "LIMIT", sk, lim)
    local h = 0
    for _, id in ipairs(list) do
      local r = load(id)
      if not r then
        redis.call("ZREM", z, id)
      else
        if tonumber(r.at) > NOWN then
          r.at = NOW
          done = done + 1
        end
        if r.hold and tonumber(r.hold) > NOWN then h = h + 1 end
        store(id, r, r.rc)
      end
    end
    held = held + h
    seen = seen + #list
    return #list, h
  end
  local got, h = perform(K.later, skip, limit)
  if got < limit then
    -- later is done: what is left of the skip belongs to the next zsets.
    local sk = skip - (redis.call("ZCOUNT", K.later, "(" .. NOW, "+inf") - h)
    if sk < 0 then sk = 0 end
    for _, z in ipairs({K.p2, K.p3, K.p4}) do
      if seen >= limit then break end
      local cnt = redis.call("ZCOUNT", z, "(" .. NOW, "+inf")
      if cnt <= sk then
        sk = sk - cnt
      elseif cnt > 0 then
        perform(z, sk, limit - seen)
        sk = 0
      end
    end
  end
  if done > 0 then notify(ARGV[4], ARGV[5]) end
  return {done, seen, 0, held, NOW}
end

local list = redis.call("ZRANGE", K.retries, 0, limit - 1)
for _, id in ipairs(list) do
  local r = load(id)
  if not r then
    redis.call("ZREM", K.retries, id)
  else
    local left
    if action == "kill_failed" then
      local got = take_payloads("q", id, r, maxp)
      morgue_put(id, got, r.err, NOW)
      left = #r.ps + r.ovn
    else
      left = drop_overflow("q", id, r, maxp)
    end
    if left > 0 then
      store(id, r, r.rc)
      partial = partial + 1
    else
      unlink(id, r)
      done = done + 1
    end
  end
end
return {done, #list, partial, 0, NOW}
