-- acquire.lua: take a shard's lease and restore its in-flight record
-- (SPEC 3.7) in one atomic step.
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] owner name
-- ARGV[3] lease TTL in milliseconds
--
-- Returns {"OK", token, epoch, restored} when the lease was taken: token is
-- "<epoch>/<owner>", epoch the shard's new acquisition count, restored the
-- number of ids put back into the queue from the previous owner's in-flight
-- batch. Returns {"HELD", current token, remaining TTL in milliseconds} when
-- another owner holds it.

local holder = redis.call("GET", K.lease)
if holder then
  return {"HELD", holder, redis.call("PTTL", K.lease)}
end
local epoch = redis.call("INCR", K.epoch)
local token = epoch .. "/" .. ARGV[2]
redis.call("SET", K.lease, token, "PX", ARGV[3])

local restored = 0
local cur = redis.call("GET", K.inflight)
if cur then
  local _, jobs = decode_batch(cur)
  restored = restore_batch(jobs)
  redis.call("DEL", K.inflight)
end
return {"OK", token, epoch, restored}
