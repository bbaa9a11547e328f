-- lib/stateful.lua: state versions and change feed entries of stateful queues
-- (docs/contract.md §11).
-- lib: keys clock fields

-- state_ver reads the version of a state hash entry: "0" for none; an
-- entry starting with a NUL byte (an empty first field, which a state never
-- has) is a deleted state's tombstone "\0" fld(version)
-- (docs/contract.md §11).
local function state_ver(v)
  if not v then return "0" end
  if string.byte(v, 1) == 0 then return (rdf(v, 2)) end
  return (rdf(v, 1))
end

-- state_tomb is the tombstone a delete leaves at version v.
local function state_tomb(v)
  return "\0" .. fld(v)
end

-- feed_put appends to the outbox a change feed entry (field "f") for id
-- at version v, to be relayed into the queue's feed stream of at most
-- maxlen entries (docs/contract.md §11): fld(id) fld(v) fld(kind)
-- fld(data) fld(time) fld(maxlen), kind "s" with the state bytes, "h"
-- with their SHA-1 (hex) when they are over FEED_INLINE bytes, "d" for a
-- delete (no data). NOW must be set (init_clock).
local FEED_INLINE = 1024
local function feed_put(id, v, kind, data, maxlen)
  if kind == "s" and #data > FEED_INLINE then
    kind, data = "h", redis.sha1hex(data)
  end
  redis.call("XADD", K.outbox, "*", "f",
    fld(id) .. fld(v) .. fld(kind) .. fld(data) .. fld(NOW) .. fld(maxlen))
end
