-- lib.lua: helpers shared by the shard scripts. The loader prepends this file
-- to every script named in scripts.go that needs it, so each script below is
-- self-contained once loaded.
--
-- Every shard script receives the shard's keys in this order (keys.go):
--   KEYS[1]  lease          STRING  current lease token, with a TTL
--   KEYS[2]  epoch          STRING  INCR counter of acquisitions
--   KEYS[3]  due            ZSET    queued id -> perform_at
--   KEYS[4]  ids            ZSET    queued id -> 0 (lexicographic index)
--   KEYS[5]  retries        ZSET    queued id -> retry_count
--   KEYS[6]  errors         HASH    queued id -> last error (retry_count >= 0 only)
--   KEYS[7]  inflight       STRING  the in-flight batch, encoded as below
--   KEYS[8]  stats          HASH    processed, failed
--   KEYS[9]  morgue         ZSET    morgue id -> updated_at
--   KEYS[10] morgue_ids     ZSET    morgue id -> 0 (lexicographic index)
--   KEYS[11] morgue_errors  HASH    morgue id -> error
-- and ARGV[1] = the shard's key prefix; per-id keys are ARGV[1].."p:"..id
-- (queued payloads: payload -> score) and ARGV[1].."m:"..id (morgue payloads).
-- All keys share one hash tag, so a script touches one cluster slot.
--
-- In-flight batch encoding: a sequence of fields, each "<len>:<bytes>":
--   "1" (version), n, token, seq, fetched_at,
--   then n jobs: id, retry_count, perform_at, error, np, then np/2 pairs of
--   payload, score (ascending score).
-- Scores and times are kept as the strings Redis returned, never re-formatted
-- through Lua numbers (which would lose precision).

local K = {
  lease = KEYS[1], epoch = KEYS[2], due = KEYS[3], ids = KEYS[4],
  retries = KEYS[5], errors = KEYS[6], inflight = KEYS[7], stats = KEYS[8],
  morgue = KEYS[9], morgue_ids = KEYS[10], morgue_errors = KEYS[11],
}
local PFX = ARGV[1]

local function pkey(id) return PFX .. "p:" .. id end
local function mkey(id) return PFX .. "m:" .. id end

-- put appends one length-prefixed field to the parts table t.
local function put(t, s)
  t[#t + 1] = #s .. ":" .. s
end

-- field reads the field starting at pos; returns it and the next position.
local function field(s, pos)
  local c = string.find(s, ":", pos, true)
  local n = tonumber(string.sub(s, pos, c - 1))
  return string.sub(s, c + 1, c + n), c + n + 1
end

-- put_job encodes one job; flat is {payload, score, payload, score, ...}.
local function put_job(t, id, rc, at, err, flat)
  put(t, id); put(t, rc); put(t, at); put(t, err); put(t, tostring(#flat))
  for i = 1, #flat do put(t, flat[i]) end
end

-- encode_batch joins a header and the parts of n encoded jobs.
local function encode_batch(n, token, seq, at, parts)
  local h = {}
  put(h, "1"); put(h, tostring(n)); put(h, token); put(h, seq); put(h, at)
  return table.concat(h) .. table.concat(parts)
end

-- decode_header returns the header fields and the position of the first job.
local function decode_header(s)
  local pos = 1
  local ver, n, token, seq, at
  ver, pos = field(s, pos)
  n, pos = field(s, pos)
  token, pos = field(s, pos)
  seq, pos = field(s, pos)
  at, pos = field(s, pos)
  return {n = tonumber(n), token = token, seq = seq, at = at}, pos
end

-- decode_batch returns the header and the list of jobs of an encoded batch.
local function decode_batch(s)
  local h, pos = decode_header(s)
  local jobs = {}
  for j = 1, h.n do
    local job = {}
    job.id, pos = field(s, pos)
    job.rc, pos = field(s, pos)
    job.at, pos = field(s, pos)
    job.err, pos = field(s, pos)
    local np
    np, pos = field(s, pos)
    local flat = {}
    for i = 1, tonumber(np) do flat[i], pos = field(s, pos) end
    job.flat = flat
    jobs[j] = job
  end
  return h, jobs
end

-- zadd_flat adds {member, score, ...} pairs to a zset with the given flag
-- ("LT": a lower score wins for an existing member), in chunks that stay
-- within Lua's argument limit.
local function zadd_flat(key, flat, flag)
  local i = 1
  while i <= #flat do
    local args = {}
    local last = math.min(#flat, i + 1999)
    for j = i, last, 2 do
      args[#args + 1] = flat[j + 1]
      args[#args + 1] = flat[j]
    end
    redis.call("ZADD", key, flag, unpack(args))
    i = last + 1
  end
end

-- requeue merges a job back into the queue as "failed job + queued job"
-- (SPEC 3.2 case 2): payloads are united (the lower score wins), and the
-- given perform_at, retry_count and error replace the queued job's.
local function requeue(id, flat, rc, at, err)
  zadd_flat(pkey(id), flat, "LT")
  redis.call("ZADD", K.due, at, id)
  redis.call("ZADD", K.ids, 0, id)
  redis.call("ZADD", K.retries, rc, id)
  if tonumber(rc) >= 0 and err ~= "" then
    redis.call("HSET", K.errors, id, err)
  else
    redis.call("HDEL", K.errors, id)
  end
end

-- restore_batch requeues every job of a decoded in-flight batch with its own
-- perform_at, retry_count and error (SPEC 3.7); it returns the count.
local function restore_batch(jobs)
  for _, job in ipairs(jobs) do
    requeue(job.id, job.flat, job.rc, job.at, job.err)
  end
  return #jobs
end

-- delete_queued removes the queued entry of id.
local function delete_queued(id)
  redis.call("DEL", pkey(id))
  redis.call("ZREM", K.due, id)
  redis.call("ZREM", K.ids, id)
  redis.call("ZREM", K.retries, id)
  redis.call("HDEL", K.errors, id)
end

-- morgue_put merges payloads into the morgue entry of id (the lower score
-- wins), sets its error and its updated_at to now.
local function morgue_put(id, flat, err, now)
  zadd_flat(mkey(id), flat, "LT")
  redis.call("ZADD", K.morgue, now, id)
  redis.call("ZADD", K.morgue_ids, 0, id)
  redis.call("HSET", K.morgue_errors, id, err)
end

-- morgue_delete removes the morgue entry of id.
local function morgue_delete(id)
  redis.call("DEL", mkey(id))
  redis.call("ZREM", K.morgue, id)
  redis.call("ZREM", K.morgue_ids, id)
  redis.call("HDEL", K.morgue_errors, id)
end

-- lease_ok reports whether token is the shard's current lease.
local function lease_ok(token)
  return redis.call("GET", K.lease) == token
end
