-- renew.lua: extend a shard's lease if the caller still holds it.
--
-- KEYS: the shard key set (lib.lua); only KEYS[1] (lease) is used.
-- ARGV[1] key prefix (unused)
-- ARGV[2] lease token
-- ARGV[3] lease TTL in milliseconds
--
-- Returns 1 when renewed, 0 when the token is not the current lease.

if lease_ok(ARGV[2]) then
  redis.call("PEXPIRE", K.lease, ARGV[3])
  return 1
end
return 0
