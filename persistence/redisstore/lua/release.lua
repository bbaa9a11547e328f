-- release.lua: give a shard's lease up. An unsettled in-flight record is
-- restored into the queue first (its ids wait for their calls' deadline
-- bound; an id a cancel marked is disposed of instead, docs/contract.md
-- §3.13), so the next owner starts from a clean shard. The fence in layout
-- 1's lease key stays.
-- lib: keys clock notify lease cold
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] lease token
-- ARGV[3] notification channel (lib/notify.lua: the queue's channel, or the
--         shard's shard channel under sharded pub/sub)
-- ARGV[4] shard number (the notification message)
--
-- Returns the number of ids restored, or -1 when the token is not the
-- current lease (nothing changes then). Publishes the shard number, so that
-- a node waiting to take the shard over acquires it at once.
--
-- Cost: O(payloads restored).

local C = cold()
local restore_inflight = C.restore_inflight

if not lease_ok(ARGV[2]) then
  return -1
end
init_clock(ARGV[1])
local restored = restore_inflight(redis.call("GET", K.inflight))
redis.call("DEL", K.outcome)
redis.call("DEL", K.lease)
notify(ARGV[3], ARGV[4])
return restored
