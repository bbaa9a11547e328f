-- permits.lua: set how many of a queue's max_concurrency permits one holder
-- (a node) has, in one step (docs/contract.md §9, docs/storage.md §9). The
-- holder's permits are the members "<holder>#<i>" of the zset, scored by
-- their expiry; expired members are dropped first, so a dead node's permits
-- come back within the ttl. The holder gets min(want, max - permits held
-- by others) permits, all with a fresh expiry; the rest of its members are
-- removed (want 0 releases them all).
-- lib: none
--
-- KEYS[1] P:{q}:2:permits  ZSET  holder#i -> expiry (ms since the epoch, Redis TIME)
-- ARGV[1] holder (no '#')
-- ARGV[2] want (>= 0)
-- ARGV[3] max (>= 1)
-- ARGV[4] ttl in ms (>= 1)
--
-- Returns the number of permits the holder has now.
--
-- Cost: O(max) (the zset never holds more than max live members plus the
-- expired ones it drops).

local pkey = KEYS[1]
local holder = ARGV[1]
local want = tonumber(ARGV[2])
local pmax = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local t = redis.call("TIME")
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

redis.call("ZREMRANGEBYSCORE", pkey, "-inf", now_ms)
local prefix = holder .. "#"
local others, mine = 0, {}
for _, m in ipairs(redis.call("ZRANGE", pkey, 0, -1)) do
  if string.sub(m, 1, #prefix) == prefix then
    mine[#mine + 1] = m
  else
    others = others + 1
  end
end
local grant = math.max(0, math.min(want, pmax - others))
for _, m in ipairs(mine) do
  redis.call("ZREM", pkey, m)
end
for i = 0, grant - 1 do
  redis.call("ZADD", pkey, now_ms + ttl, prefix .. i)
end
if grant > 0 then
  redis.call("PEXPIRE", pkey, ttl * 2)
end
return grant
