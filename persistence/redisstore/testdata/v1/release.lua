-- release.lua: give a shard's lease up. An unsettled in-flight record is
-- restored into the queue first, so the next owner starts from a clean shard.
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] lease token
-- ARGV[3] notification channel
-- ARGV[4] shard number (the notification message)
--
-- Returns the number of ids restored, or -1 when the token is not the
-- current lease (nothing changes then). Publishes the shard number on the
-- channel, so that a node waiting to take the shard over acquires it at once.

if not lease_ok(ARGV[2]) then
  return -1
end
local restored = 0
local cur = redis.call("GET", K.inflight)
if cur then
  local _, jobs = decode_batch(cur)
  restored = restore_batch(jobs)
  redis.call("DEL", K.inflight)
end
redis.call("DEL", K.lease)
redis.call("PUBLISH", ARGV[3], ARGV[4])
return restored
