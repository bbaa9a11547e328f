-- downgrade.lua: move one bounded chunk of a shard's layout 2 data back into
-- layout 1's keys, to roll a store back to the previous release
-- (docs/storage.md section 8). Run only while no layout 2 node serves the
-- shard (the client checks the lease).
-- lib: keys fence clock cold
--
-- KEYS: the shard key set (lib/keys.lua); for "queue" and "morgue", KEYS[35..]
-- are layout 1's per-id keys ("p:<id>" or "m:<id>") of the ids, in order.
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] operation:
--         "inflight": restore the in-flight record into the queue
--         "queue": move the queued jobs named from ARGV[4] on
--         "morgue": move the morgue entries named from ARGV[4] on
--         "finish": move the counters, and when the shard holds no layout
--         2 data any more, delete its layout 2 keys and the fence
-- ARGV[3] most payloads moved per id
--
-- A job keeps its payloads and scores (not its priority: layout 1 has
-- none), perform_at (its due time, when a
-- hold kept it later), retry count and error.
--
-- Returns {moved, partial}: ids moved completely, ids with payloads left
-- for another call ("finish": moved is 1 when the shard is clean).
--
-- Cost: O(ids + payloads moved).

local C = cold()
local rec_decode, rec_encode, take_payloads, load, due_of, store, unlink, restore_inflight = C.rec_decode, C.rec_encode, C.take_payloads, C.load, C.due_of, C.store, C.unlink, C.restore_inflight

init_clock(ARGV[1])
local op, maxp = ARGV[2], tonumber(ARGV[3])

if op == "inflight" then
  return {restore_inflight(redis.call("GET", K.inflight)), 0}
end

if op == "finish" then
  local c = redis.call("HMGET", K.meta, "processed", "failed")
  if c[1] then redis.call("HINCRBY", K.v1stats, "processed", c[1]) end
  if c[2] then redis.call("HINCRBY", K.v1stats, "failed", c[2]) end
  redis.call("HDEL", K.meta, "processed", "failed")
  if redis.call("EXISTS", K.jobs, K.morgue, K.inflight) > 0 then return {0, 0} end
  redis.call("DEL", K.fifo, K.later, K.p2, K.p3, K.p4, K.retries, K.ovo, K.ovs, K.meta, K.mat, K.lease, K.outcome)
  if redis.call("GET", K.v1lease) == FENCE then redis.call("DEL", K.v1lease) end
  return {1, 0}
end

local moved, partial = 0, 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local key = KEYS[FIXED_KEYS + i - 3]
  if op == "queue" then
    local r = load(id)
    if r then
      local got = take_payloads("q", id, r, maxp)
      for _, p in ipairs(got) do redis.call("ZADD", key, "LT", p[1], p[2]) end
      redis.call("ZADD", K.v1due, due_of(r), id)
      redis.call("ZADD", K.v1ids, 0, id)
      redis.call("ZADD", K.v1retries, r.rc, id)
      if tonumber(r.rc) >= 0 and r.err ~= "" then
        redis.call("HSET", K.v1errors, id, r.err)
      end
      if #r.ps + r.ovn > 0 then
        store(id, r, r.rc)
        partial = partial + 1
      else
        unlink(id, r)
        moved = moved + 1
      end
    end
  else
    local s = redis.call("HGET", K.morgue, id)
    if s then
      local m = rec_decode(s)
      local got = take_payloads("m", id, m, maxp)
      for _, p in ipairs(got) do redis.call("ZADD", key, "LT", p[1], p[2]) end
      redis.call("ZADD", K.v1morgue, m.at, id)
      redis.call("ZADD", K.v1morgue_ids, 0, id)
      redis.call("HSET", K.v1morgue_errors, id, m.err)
      if #m.ps + m.ovn > 0 then
        redis.call("HSET", K.morgue, id, rec_encode(m))
        partial = partial + 1
      else
        redis.call("HDEL", K.morgue, id)
        redis.call("ZREM", K.mat, id)
        moved = moved + 1
      end
    end
  end
end
return {moved, partial}
