-- advance.lua: settle the owner's in-flight batch and fetch the next one, in
-- one atomic step (SPEC 3.3 to 3.6). The steady-state cost of processing a
-- shard is one call of this script per batch.
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] lease token of the caller
-- ARGV[3] now (unix seconds)
-- ARGV[4] seq of the batch being settled ("0" = none)
-- ARGV[5] seq for the batch to fetch
-- ARGV[6] how many ids to fetch ("0" = settle only)
-- ARGV[7] max_retry_count
-- ARGV[8] number of failed ids, then per failed id three values:
--         id, error, retry_at (perform_at if it keeps retries left)
-- then the number of skipped ids (not handled: they go back as they were),
--         then the ids
--
-- Returns {batch, more, next_due, dead, processed, failed, restored}:
--   batch     the fetched batch, encoded (lib.lua), or "" when nothing is due
--   more      "1" when the fetch stopped at the requested size
--   next_due  perform_at of the earliest queued job not yet due, if the fetch
--             met one, else ""
--   dead      the jobs moved to the morgue, encoded as a batch, or ""
--   processed, failed, restored: counts of ids
-- Error reply "LEASE_LOST" when ARGV[2] is not the current lease.
--
-- Settlement: the in-flight record is settled only when it carries the
-- caller's token and the seq being settled. When it carries the seq to fetch,
-- an earlier call with the same arguments already ran and its reply was lost:
-- that batch is returned again and nothing changes. Any other in-flight
-- record (a previous owner's, or one the caller lost track of) is restored
-- into the queue first.

local token, now = ARGV[2], ARGV[3]
local settle_seq, next_seq = ARGV[4], ARGV[5]
local want = tonumber(ARGV[6])
local max_retry = tonumber(ARGV[7])
local nfail = tonumber(ARGV[8])
local nskip = tonumber(ARGV[9 + 3 * nfail])

local cur = redis.call("MGET", K.lease, K.inflight)
if cur[1] ~= token then
  return redis.error_reply("LEASE_LOST")
end

local processed, failed, restored = 0, 0, 0
local dead_parts, ndead = {}, 0

if cur[2] then
  local h = decode_header(cur[2])
  if h.token == token and h.seq == next_seq then
    return {cur[2], "0", "", "", 0, 0, 0}
  end
  if h.token == token and h.seq == settle_seq then
    if nfail == 0 and nskip == 0 then
      processed = h.n
    else
      local fails, skips = {}, {}
      for i = 0, nfail - 1 do
        fails[ARGV[9 + 3 * i]] = {ARGV[10 + 3 * i], ARGV[11 + 3 * i]}
      end
      for i = 1, nskip do
        skips[ARGV[9 + 3 * nfail + i]] = true
      end
      local _, jobs = decode_batch(cur[2])
      for _, job in ipairs(jobs) do
        local f = fails[job.id]
        if skips[job.id] then
          requeue(job.id, job.flat, job.rc, job.at, job.err)
          restored = restored + 1
        elseif not f then
          processed = processed + 1
        else
          failed = failed + 1
          local rc = tonumber(job.rc) + 1
          if rc >= max_retry then
            -- The lowest-scored payload of what the handler was given dies;
            -- the rest go back as a fresh job.
            local dead = {job.flat[1], job.flat[2]}
            morgue_put(job.id, dead, f[1], now)
            put_job(dead_parts, job.id, tostring(rc), job.at, f[1], dead)
            ndead = ndead + 1
            if #job.flat > 2 then
              local rest = {}
              for i = 3, #job.flat do rest[#rest + 1] = job.flat[i] end
              requeue(job.id, rest, "-1", now, "")
            end
          else
            requeue(job.id, job.flat, tostring(rc), f[2], f[1])
          end
        end
      end
    end
    if processed > 0 then redis.call("HINCRBY", K.stats, "processed", processed) end
    if failed > 0 then redis.call("HINCRBY", K.stats, "failed", failed) end
  else
    local _, jobs = decode_batch(cur[2])
    restored = restore_batch(jobs)
  end
end

local dead = ""
if ndead > 0 then dead = encode_batch(ndead, token, settle_seq, now, dead_parts) end

local parts, n, more, next_due = {}, 0, "0", ""
if want > 0 then
  local popped = redis.call("ZPOPMIN", K.due, want)
  local ids, ats = {}, {}
  local nnum = tonumber(now)
  local i = 1
  while i <= #popped do
    if tonumber(popped[i + 1]) > nnum then
      -- Not due: put it and everything after it back.
      next_due = popped[i + 1]
      local back = {}
      for j = i, #popped, 2 do
        back[#back + 1] = popped[j + 1]
        back[#back + 1] = popped[j]
      end
      redis.call("ZADD", K.due, unpack(back))
      break
    end
    n = n + 1
    ids[n], ats[n] = popped[i], popped[i + 1]
    i = i + 2
  end
  if n == want then more = "1" end
  if n > 0 then
    local rcs = redis.call("ZMSCORE", K.retries, unpack(ids))
    local pkeys = {}
    for j = 1, n do
      local id = ids[j]
      pkeys[j] = pkey(id)
      local flat = redis.call("ZRANGE", pkeys[j], 0, -1, "WITHSCORES")
      local rc = rcs[j] or "-1"
      local err = ""
      if tonumber(rc) >= 0 then
        err = redis.call("HGET", K.errors, id) or ""
        if err ~= "" then redis.call("HDEL", K.errors, id) end
      end
      put_job(parts, id, rc, ats[j], err, flat)
    end
    redis.call("DEL", unpack(pkeys))
    redis.call("ZREM", K.ids, unpack(ids))
    redis.call("ZREM", K.retries, unpack(ids))
  end
end

local batch = ""
if n > 0 then
  batch = encode_batch(n, token, next_seq, now, parts)
  redis.call("SET", K.inflight, batch)
elseif cur[2] then
  redis.call("DEL", K.inflight)
end

return {batch, more, next_due, dead, processed, failed, restored}
