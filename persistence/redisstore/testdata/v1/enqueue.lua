-- enqueue.lua: add jobs to one shard, merging with queued jobs of the same id
-- as "new job + queued job" (SPEC 3.2 case 1): payloads are united and the
-- lower score wins for an equal payload; a queued job keeps its perform_at
-- and retry_count. A job that is in flight gets a fresh queued entry.
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] notification channel
-- ARGV[3] shard number (the notification message)
-- ARGV[4..] per job four values: id, payload, score, perform_at
--
-- Returns the number of jobs written. Publishes the shard number on the
-- channel so that the shard's owner wakes up.
--
-- Cost: one ZADD per job (its payload) plus one ZADD per index for the whole
-- call. Only the first job of an id in the call counts for the indexes, as if
-- the jobs were added one by one with ZADD NX.

local due, ids, rcs, seen = {}, {}, {}, {}
local n = 0
for i = 4, #ARGV, 4 do
  local id = ARGV[i]
  redis.call("ZADD", pkey(id), "LT", ARGV[i + 2], ARGV[i + 1])
  if not seen[id] then
    seen[id] = true
    due[#due + 1] = ARGV[i + 3]
    due[#due + 1] = id
    ids[#ids + 1] = 0
    ids[#ids + 1] = id
    rcs[#rcs + 1] = -1
    rcs[#rcs + 1] = id
  end
  n = n + 1
end

-- zadd_nx adds flat {score, member, ...} args in chunks within Lua's limits.
local function zadd_nx(key, args)
  for i = 1, #args, 2000 do
    redis.call("ZADD", key, "NX", unpack(args, i, math.min(i + 1999, #args)))
  end
end
if n > 0 then
  zadd_nx(K.due, due)
  zadd_nx(K.ids, ids)
  zadd_nx(K.retries, rcs)
end
redis.call("PUBLISH", ARGV[2], ARGV[3])
return n
