-- L2 enqueue: KEYS jobs(hash) due(zset) meta; ARGV ids... (blank payloads, one call per 100 jobs)
local t = redis.call("TIME"); local now = t[1] .. "." .. string.format("%06d", t[2])
local cur = redis.call("HMGET", KEYS[1], unpack(ARGV))
local hs, zs = {}, {}
for i, id in ipairs(ARGV) do
  if not cur[i] then
    hs[#hs+1] = id; hs[#hs+1] = mkrec(0, now, "-1", nil, now, "")
    zs[#zs+1] = now; zs[#zs+1] = id
  end
end
if #hs > 0 then redis.call("HSET", KEYS[1], unpack(hs)); redis.call("ZADD", KEYS[2], unpack(zs)) end
return #hs / 2
