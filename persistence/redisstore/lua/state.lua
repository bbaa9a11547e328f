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
-- Returns {"OK", n}: for "set" n is the new version, for "del" 1 when a
-- state was deleted, 0 when there was none. {"CONFLICT", v} when the
-- current version v is not ARGV[3]; nothing is written.
--
-- Cost: O(1) plus the state's size.

local op, id, expected = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call("HGET", K.state, id)
local v = "0"
if cur then v = (rdf(cur, 1)) end
if v ~= expected then return {"CONFLICT", v} end
if op == "del" then
  if not cur then return {"OK", 0} end
  redis.call("HDEL", K.state, id)
  return {"OK", 1}
end
local nv = tostring(tonumber(v) + 1)
redis.call("HSET", K.state, id, fld(nv) .. ARGV[4])
return {"OK", nv}
