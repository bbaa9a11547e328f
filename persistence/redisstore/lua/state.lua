-- state.lua: compare-and-set of one id's state from outside the handler
-- (docs/contract.md §11). Not fenced: it is the external writer, and the
-- shard owner's settle notices the version it changed.
-- lib: keys clock fields stateful guard
--
-- KEYS: the shard key set (lib/keys.lua); only the state hash is touched.
-- ARGV[1] "set" or "del"
-- ARGV[2] id
-- ARGV[3] expected version ("0" = the id has no state)
-- ARGV[4] the new state bytes ("set")
-- ARGV[5] now ("" = Redis TIME; set only by the test seam)
-- ARGV[6] the queue's change feed bound from its registration ("0": no
--         feed; "" or absent: unknown, the bound the shard's owner recorded
--         in meta's "feed" with its first Advance is used)
--
-- A change adds a change feed entry to the outbox (feed_put) when the
-- queue keeps a feed; the caller relays it.
--
-- Returns {"OK", n}: for "set" n is the new version, for "del" the version
-- of the tombstone the delete left (the version keeps counting: no ABA),
-- 0 when there was no state (a tombstone or nothing: nothing is written).
-- A third value is 1 when a feed entry was added to the outbox. {"CONFLICT", v} when the
-- current version v is not ARGV[3]; nothing is written.
--
-- Error reply "RESHARDING" or "RESHARDED" when a reshard drains, or
-- drained, the shard (lib/guard.lua): nothing is written.
--
-- Cost: O(1) plus the state's size.

local op, id, expected = ARGV[1], ARGV[2], ARGV[3]
do
  local refused = reshard_guard()
  if refused then return refused end
end
init_clock(ARGV[5])
local function feed_bound()
  if ARGV[6] and ARGV[6] ~= "" then return ARGV[6] end
  return redis.call("HGET", K.meta, "feed")
end
local cur = redis.call("HGET", K.state, id)
local v = state_ver(cur)
if v ~= expected then return {"CONFLICT", v} end
if op == "del" then
  if not cur or string.byte(cur, 1) == 0 then return {"OK", 0} end
  local nv = tostring(tonumber(v) + 1)
  redis.call("HSET", K.state, id, state_tomb(nv))
  local feedmax = feed_bound()
  if feedmax and feedmax ~= "0" then
    feed_put(id, nv, "d", "", feedmax)
    return {"OK", nv, 1}
  end
  return {"OK", nv, 0}
end
local nv = tostring(tonumber(v) + 1)
redis.call("HSET", K.state, id, fld(nv) .. ARGV[4])
local feedmax = feed_bound()
if feedmax and feedmax ~= "0" then
  feed_put(id, nv, "s", ARGV[4], feedmax)
  return {"OK", nv, 1}
end
return {"OK", nv, 0}
