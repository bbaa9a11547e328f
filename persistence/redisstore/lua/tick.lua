-- tick.lua: move a periodic job's last tick, as nodes show it and count
-- missed ticks from, forward (docs/contract.md §9, docs/storage.md §9).
-- Whether a tick is enqueued is decided by enqueue.lua in tick mode, on the
-- job's shard; nodes call this after it.
-- lib: none
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
