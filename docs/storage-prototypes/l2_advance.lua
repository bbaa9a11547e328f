-- L2 advance: KEYS jobs due inflight meta; ARGV n
local t = redis.call("TIME"); local now = t[1] .. "." .. string.format("%06d", t[2])
local cur = redis.call("GET", KEYS[3])
if cur then redis.call("DEL", KEYS[3]); redis.call("HINCRBY", KEYS[4], "processed", tonumber(string.sub(cur, 1, 4))) end
local ids = redis.call("ZRANGEBYSCORE", KEYS[2], "-inf", now, "LIMIT", 0, tonumber(ARGV[1]))
if #ids == 0 then return 0 end
local recs = redis.call("HMGET", KEYS[1], unpack(ids))
local parts = {string.format("%04d", #ids)}
for i, id in ipairs(ids) do parts[#parts+1] = f(id) .. f(recs[i]) end
redis.call("HDEL", KEYS[1], unpack(ids))
redis.call("ZREM", KEYS[2], unpack(ids))
redis.call("SET", KEYS[3], table.concat(parts))
return #ids
