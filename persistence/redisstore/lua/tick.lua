-- tick.lua: move a periodic job's last tick forward (docs/contract.md §9,
-- docs/storage.md §9): the node whose call moves it enqueues the tick, so
-- each tick is enqueued once cluster-wide.
--
-- KEYS[1] P:{orderly}:2:ticks  HASH  periodic job name -> last tick (ms since the epoch)
-- ARGV[1] name
-- ARGV[2] tick (ms since the epoch, an integer)
--
-- Returns 1 when the tick moved forward (the caller enqueues it), 0 when
-- the stored tick is already at or past it.
--
-- Cost: O(1).

local cur = tonumber(redis.call("HGET", KEYS[1], ARGV[1]))
local tick = tonumber(ARGV[2])
if cur ~= nil and cur >= tick then
  return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1
