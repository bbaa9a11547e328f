-- L3 advance: KEYS jobs fifo later inflight meta; ARGV n
local t = redis.call("TIME"); local now = t[1] .. "." .. string.format("%06d", t[2])
local cur = redis.call("GET", KEYS[4])
if cur then redis.call("DEL", KEYS[4]); redis.call("HINCRBY", KEYS[5], "processed", tonumber(string.sub(cur, 1, 4))) end
local n = tonumber(ARGV[1])
local els = redis.call("LRANGE", KEYS[2], 0, n - 1)
if #els == 0 then return 0 end
local parts = {string.format("%04d", #els)}
for _, e in ipairs(els) do
  local c = string.find(e, ":", 1, true)
  local seq, id = string.sub(e, 1, c - 1), string.sub(e, c + 1)
  local k = string.gsub(id, "%z", "\0\1") .. "\0\0"
  local hit = redis.call("ZRANGEBYLEX", KEYS[1], "[" .. k, "(" .. string.sub(k, 1, -2) .. "\1", "LIMIT", 0, 1)[1]
  if hit then
    redis.call("ZREM", KEYS[1], hit)
    parts[#parts+1] = f(id) .. f(string.sub(hit, #k + 1))
  end
end
redis.call("LTRIM", KEYS[2], #els, -1)
redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "LIMIT", 0, n)
redis.call("SET", KEYS[4], table.concat(parts))
return #els
