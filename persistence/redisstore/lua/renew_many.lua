-- renew_many.lua: extend several shards' leases at once, each only if the
-- caller still holds it (renew.lua's rule, lease by lease). The keys span
-- slots: standalone Redis and Sentinel only (on a Cluster, renew.lua runs
-- per shard, in one pipeline per master).
-- lib: fence
--
-- KEYS[2i-1] lease i's layout 1 lease key (the fence FENCE, or a reshard's)
-- KEYS[2i]   lease i's layout 2 lease key
-- ARGV[1]    lease TTL in milliseconds
-- ARGV[1+i]  lease i's token
--
-- Returns a list with, for each lease in order, 1 when renewed, 0 when the
-- token is not the current lease (or layout 1's lease key no longer holds
-- the fence).
--
-- Cost: O(leases).

local out = {}
for i = 1, #ARGV - 1 do
  local v = redis.call("MGET", KEYS[2 * i], KEYS[2 * i - 1])
  if v[1] == ARGV[i + 1] and fenced(v[2]) then
    redis.call("PEXPIRE", KEYS[2 * i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
