-- L3 enqueue: KEYS jobs(lex zset) fifo(list) later(zset) meta; ARGV ids... (one call per 100 jobs)
local t = redis.call("TIME"); local now = t[1] .. "." .. string.format("%06d", t[2])
local base = redis.call("HINCRBY", KEYS[4], "fseq", #ARGV) - #ARGV
local zs, ls = {}, {}
for i, id in ipairs(ARGV) do
  local k = string.gsub(id, "%z", "\0\1") .. "\0\0"
  local hit = redis.call("ZRANGEBYLEX", KEYS[1], "[" .. k, "(" .. string.sub(k, 1, -2) .. "\1", "LIMIT", 0, 1)[1]
  if not hit then
    local seq = tostring(base + i)
    zs[#zs+1] = 0; zs[#zs+1] = k .. mkrec(2, now, "-1", seq, now, "")
    ls[#ls+1] = seq .. ":" .. id
  end
end
if #zs > 0 then redis.call("ZADD", KEYS[1], unpack(zs)); redis.call("RPUSH", KEYS[2], unpack(ls)) end
return #ls
