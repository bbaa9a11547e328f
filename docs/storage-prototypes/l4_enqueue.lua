-- L4 enqueue: KEYS jobs(hash) fifo(list) later meta ids(lex, with L4+ids); ARGV withids ids...
local t = redis.call("TIME"); local now = t[1] .. "." .. string.format("%06d", t[2])
local withids = ARGV[1] == "1"
local ids = {unpack(ARGV, 2)}
local cur = redis.call("HMGET", KEYS[1], unpack(ids))
local base = redis.call("HINCRBY", KEYS[4], "fseq", #ids) - #ids
local hs, ls, xs = {}, {}, {}
for i, id in ipairs(ids) do
  if not cur[i] then
    local seq = tostring(base + i)
    hs[#hs+1] = id; hs[#hs+1] = mkrec(2, now, "-1", seq, now, "")
    ls[#ls+1] = seq .. ":" .. id
    xs[#xs+1] = 0; xs[#xs+1] = id
  end
end
if #hs > 0 then
  redis.call("HSET", KEYS[1], unpack(hs)); redis.call("RPUSH", KEYS[2], unpack(ls))
  if withids then redis.call("ZADD", KEYS[5], unpack(xs)) end
end
return #ls
