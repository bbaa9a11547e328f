-- acquire.lua: take a shard's lease and restore its in-flight record
-- (docs/contract.md §3.7) in one atomic step.
-- lib: keys fence clock batch cold
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] owner name
-- ARGV[3] lease TTL in milliseconds
-- ARGV[4] nonce: random, so that no two acquisitions yield one token
-- ARGV[5] floor: the epoch is at least this ("" or absent: none); the
--         caller's highest epoch seen, plus one (docs/storage.md section 4)
-- ARGV[6] milliseconds added to Redis TIME for the epoch ("" or absent:
--         none); set only by tests, to play a master whose clock is behind
--
-- The shard is free when layout 1's lease key is absent or holds the fence
-- (no layout 1 node serves it; a reshard's fence counts, lib/fence.lua) and the layout 2 lease is absent. Taking it
-- writes the fence into layout 1's lease key (no TTL): layout 1 nodes never
-- serve the shard again.
--
-- The epoch is max(previous epoch + 1, Redis TIME in milliseconds, floor),
-- so it grows even after Redis lost its last writes: past the lost epochs
-- by the clock, or by the floor, which carries every epoch the caller saw
-- (a promoted replica whose clock is behind). The token is
-- "<epoch>/<owner>/<nonce>".
--
-- Restored ids wait for the deadline bound of their calls (lib/cold.lua
-- hold_of) before they are fetched again; an id a cancel marked is
-- disposed of instead (lib/cold.lua cancel_dispose, docs/contract.md
-- §3.13) and not counted as restored. A dead report the previous owner
-- may never have seen (its reply lost) is handed to the new owner: its
-- first Advance reports it (lib/batch.lua carry_outcome).
--
-- Returns {"OK", token, epoch, restored, v1} where restored counts the ids
-- put back into the queue and v1 is 1 when layout 1 left an in-flight
-- record to restore (the client restores it in chunks, migrate.lua).
-- Returns {"HELD", holder token, remaining TTL in ms} when the shard is
-- held, by a layout 1 or a layout 2 owner.
--
-- Cost: O(payloads restored), at most about 2 x max_payloads_per_call.

local C = cold()
local restore_inflight = C.restore_inflight

local v1 = redis.call("GET", K.v1lease)
if v1 and not fenced(v1) then
  return {"HELD", v1, redis.call("PTTL", K.v1lease)}
end
local holder = redis.call("GET", K.lease)
if holder then
  return {"HELD", holder, redis.call("PTTL", K.lease)}
end
init_clock(ARGV[1])

local t = redis.call("TIME")
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + (tonumber(ARGV[6] or "") or 0)
local epoch = tonumber(redis.call("GET", K.epoch) or "0") + 1
if ms > epoch then epoch = ms end
local floor = tonumber(ARGV[5] or "") or 0
if floor > epoch then epoch = floor end
local es = string.format("%.0f", epoch)
redis.call("SET", K.epoch, es)
local token = es .. "/" .. ARGV[2] .. "/" .. ARGV[4]
redis.call("SET", K.lease, token, "PX", ARGV[3])
if not v1 then redis.call("SET", K.v1lease, FENCE) end

local restored = restore_inflight(redis.call("GET", K.inflight))
carry_outcome(token)
return {"OK", token, epoch, restored, redis.call("EXISTS", K.v1inflight)}
