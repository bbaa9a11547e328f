-- renew.lua: extend a shard's lease if the caller still holds it.
-- lib: keys lease
--
-- KEYS: the shard key set (lib/keys.lua); only the leases are read.
-- ARGV[1] lease token
-- ARGV[2] lease TTL in milliseconds
--
-- Returns 1 when renewed, 0 when the token is not the current lease (or
-- layout 1's lease key no longer holds the fence).
--
-- Cost: O(1).

if lease_ok(ARGV[1]) then
  redis.call("PEXPIRE", K.lease, ARGV[2])
  return 1
end
return 0
