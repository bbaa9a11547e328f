-- state.lua: compare-and-set of one id's state from outside the handler
-- (docs/contract.md §11). Not fenced: it is the external writer, and the
-- shard owner's settle notices the version it changed.
--
-- KEYS: the shard key set (lib.lua); only the state hash is touched.
-- ARGV[1] "set" or "del"
-- ARGV[2] id
-- ARGV[3] expected version ("0" = the id has no state)
-- ARGV[4] the new state bytes ("set")
--
-- Returns {"OK", n}: for "set" n is the new version, for "del" the version
-- of the tombstone the delete left (the version keeps counting: no ABA),
-- 0 when there was no state (a tombstone or nothing: nothing is written). {"CONFLICT", v} when the
-- current version v is not ARGV[3]; nothing is written.
--
-- Cost: O(1) plus the state's size.

local op, id, expected = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call("HGET", K.state, id)
local v = state_ver(cur)
if v ~= expected then return {"CONFLICT", v} end
if op == "del" then
  if not cur or string.byte(cur, 1) == 0 then return {"OK", 0} end
  local nv = tostring(tonumber(v) + 1)
  redis.call("HSET", K.state, id, state_tomb(nv))
  return {"OK", nv}
end
local nv = tostring(tonumber(v) + 1)
redis.call("HSET", K.state, id, fld(nv) .. ARGV[4])
return {"OK", nv}
