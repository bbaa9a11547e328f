-- reshard.lua: prepare one shard for a reshard (docs/storage.md section 11).
-- lib: keys fence notify
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] "init": the shard joins the new generation ARGV[2];
--         "drain": the shard, of generation ARGV[2], is to be drained;
--         "state": read only
-- ARGV[2] the generation
-- ARGV[3] init: the dedup window in ms ("" = off); drain: the
--         notification channel (lib/notify.lua)
-- ARGV[4] drain: the shard's number (the notification message)
--
-- init writes the generation into the meta ("gen"), clears what a drained
-- shard of an earlier generation left there ("xs", the export cursors, the
-- relay marks "relay:*": they name entries that shard took, not this one)
-- and sets the fence (a drained shard's MOVED goes); it refuses a shard that
-- still holds queued jobs or is being drained ("BUSY").
-- drain, on a shard of that generation not drained yet, replaces the fence
-- with DRAIN and sets meta "xs" to "d": the owner's next Advance fetches
-- nothing and says so; the owner is woken. On a shard of another
-- generation, or drained already, it changes nothing.
--
-- Returns the shard's reshard state: "" (none), "d" (draining), "s"
-- (sealed), "m" (drained), then the ids moved so far (meta "xmoved"), the
-- generation (meta "gen", absent: 1) and the ids queued, as {state, moved,
-- gen, queued}.
--
-- Cost: O(1) (init: O(fields of the meta), a few dozen).

local op, gen = ARGV[1], ARGV[2]
local m = redis.call("HMGET", K.meta, "xs", "gen", "xmoved")
if op == "init" then
  if m[1] == "d" or m[1] == "s" or redis.call("HLEN", K.jobs) > 0 then
    return redis.error_reply("BUSY the shard still holds jobs of an earlier generation")
  end
  redis.call("HDEL", K.meta, "xs", "xmoved", "xc:s", "xc:j", "xc:m", "xc:f", "xc:a")
  for _, f in ipairs(redis.call("HKEYS", K.meta)) do
    if string.sub(f, 1, 6) == "relay:" then redis.call("HDEL", K.meta, f) end
  end
  redis.call("HSET", K.meta, "gen", gen)
  if ARGV[3] ~= "" then redis.call("HSET", K.meta, "dw", ARGV[3]) else redis.call("HDEL", K.meta, "dw") end
  local v1 = redis.call("GET", K.v1lease)
  if not v1 or v1 == MOVED then redis.call("SET", K.v1lease, FENCE) end
  return {"", "0", gen, "0"}
end
if op == "drain" and (m[2] or "1") == gen and not m[1] then
  local v1 = redis.call("GET", K.v1lease)
  if v1 and not fenced(v1) then
    return redis.error_reply("NOT_FENCED a node of the previous storage layout may serve the shard")
  end
  redis.call("SET", K.v1lease, DRAIN)
  redis.call("HSET", K.meta, "xs", "d")
  notify(ARGV[3], ARGV[4])
  return {"d", m[3] or "0", gen, tostring(redis.call("HLEN", K.jobs))}
end
return {m[1] or "", m[3] or "0", m[2] or "1", tostring(redis.call("HLEN", K.jobs))}
