-- rate.lua: take tokens from a queue's token bucket (rate_limit,
-- docs/contract.md §9, docs/storage.md §9). The bucket refills at rate
-- tokens a second up to burst, by Redis TIME; one token is one handler
-- call.
-- lib: none
--
-- KEYS[1] P:{q}:2:rate  HASH  tokens (float), at (ms since the epoch, Redis TIME)
-- ARGV[1] rate, tokens per second (> 0)
-- ARGV[2] burst (>= 1)
-- ARGV[3] want (>= 1)
--
-- Returns {granted, wait_ms}: the tokens taken (0 to want), and when none
-- was, the ms until the next token is due.
--
-- Cost: O(1).

local rkey = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local t = redis.call("TIME")
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local v = redis.call("HMGET", rkey, "tokens", "at")
local tokens, at = tonumber(v[1]), tonumber(v[2])
if tokens == nil or at == nil then
  tokens, at = burst, now_ms
end
if now_ms > at then
  tokens = math.min(burst, tokens + (now_ms - at) * rate / 1000)
  at = now_ms
end
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
redis.call("HSET", rkey, "tokens", tostring(tokens), "at", tostring(at))
-- A full bucket is the same as no bucket: let an idle queue's key go.
redis.call("PEXPIRE", rkey, math.ceil(burst / rate * 1000) + 1000)
local wait = 0
if granted == 0 then
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
return {granted, wait}
