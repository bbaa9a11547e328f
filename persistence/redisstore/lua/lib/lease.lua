-- lib/lease.lua: the lease check of the shard scripts.
-- lib: keys fence

-- lease_ok reports whether token is the shard's lease and layout 1's lease
-- key holds the fence (or a reshard's, lib/fence.lua).
local function lease_ok(token)
  local v = redis.call("MGET", K.lease, K.v1lease)
  return v[1] == token and fenced(v[2])
end
