-- L4 advance: KEYS jobs fifo later inflight meta ids; ARGV n withids
local t = redis.call("TIME"); local now = t[1] .. "." .. string.format("%06d", t[2])
local cur = redis.call("GET", KEYS[4])
if cur then redis.call("DEL", KEYS[4]); redis.call("HINCRBY", KEYS[5], "processed", tonumber(string.sub(cur, 1, 4))) end
local n = tonumber(ARGV[1])
local els = redis.call("LRANGE", KEYS[2], 0, n - 1)
if #els == 0 then return 0 end
local ids = {}
for i, e in ipairs(els) do local c = string.find(e, ":", 1, true); ids[i] = string.sub(e, c + 1) end
local recs = redis.call("HMGET", KEYS[1], unpack(ids))
local parts = {string.format("%04d", #ids)}
for i, id in ipairs(ids) do if recs[i] then parts[#parts+1] = f(id) .. f(recs[i]) end end
redis.call("HDEL", KEYS[1], unpack(ids))
if ARGV[2] == "1" then redis.call("ZREM", KEYS[6], unpack(ids)) end
redis.call("LTRIM", KEYS[2], #els, -1)
redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "LIMIT", 0, n)
redis.call("SET", KEYS[4], table.concat(parts))
return #els
