-- morgue.lua: requeue or delete morgue entries of one shard (docs/contract.md
-- §3.8), bounded per call.
-- lib: keys clock notify cold guard
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
-- ARGV[2] operation: "requeue" or "delete"
-- ARGV[3] notification channel (lib/notify.lua: the queue's channel, or the
--         shard's shard channel under sharded pub/sub)
-- ARGV[4] shard number (the notification message)
-- ARGV[5] selection: "ids" (the ids follow from ARGV[9]), "first" (the
--         first ARGV[6] entries by updated_at) or "before" (up to ARGV[6]
--         entries updated before ARGV[8], for retention)
-- ARGV[6] limit for "first" and "before"
-- ARGV[7] most payloads of one entry moved or deleted per call
-- ARGV[8] the cut-off time for "before"
--
-- A requeued entry merges as "morgue job + queued job" (docs/contract.md §3.2
-- case 3): payloads united (lower score wins), perform_at = now, retry_count
-- = -1.
--
-- Returns {done, partial, seen}: done counts entries requeued or deleted
-- completely, partial the entries left with payloads for another call,
-- seen the entries of the selection that exist. Unknown ids are skipped.
--
-- Error reply "RESHARDING" or "RESHARDED" when a reshard drains, or
-- drained, the shard (lib/guard.lua), for every selection but "before":
-- nothing changes.
--
-- Cost: O(entries + payloads moved), payloads moved <= ARGV[7] per entry.

local C = cold()
local rec_decode, rec_encode, take_payloads, drop_overflow, requeue = C.rec_decode, C.rec_encode, C.take_payloads, C.drop_overflow, C.requeue

init_clock(ARGV[1])
local op, sel, maxp = ARGV[2], ARGV[5], tonumber(ARGV[7])
if sel ~= "before" then
  -- (The owner's retention, "before", goes on while its shard is drained.)
  local refused = reshard_guard()
  if refused then return refused end
end
local list
if sel == "first" then
  list = redis.call("ZRANGE", K.mat, 0, tonumber(ARGV[6]) - 1)
elseif sel == "before" then
  list = redis.call("ZRANGEBYSCORE", K.mat, "-inf", "(" .. ARGV[8], "LIMIT", 0, tonumber(ARGV[6]))
else
  list = {}
  for i = 9, #ARGV do list[#list + 1] = ARGV[i] end
end

local done, partial, seen = 0, 0, 0
for _, id in ipairs(list) do
  local s = redis.call("HGET", K.morgue, id)
  if s then
    seen = seen + 1
    local m = rec_decode(s)
    if op == "requeue" then
      local got = take_payloads("m", id, m, maxp)
      requeue(id, got, "-1", NOW, "", nil)
    else
      drop_overflow("m", id, m, maxp)
      m.ps = {}
    end
    if #m.ps + m.ovn > 0 then
      redis.call("HSET", K.morgue, id, rec_encode(m))
      partial = partial + 1
    else
      redis.call("HDEL", K.morgue, id)
      redis.call("ZREM", K.mat, id)
      done = done + 1
    end
  elseif sel ~= "ids" then
    redis.call("ZREM", K.mat, id)
  end
end
if op == "requeue" and done + partial > 0 then
  notify(ARGV[3], ARGV[4])
end
return {done, partial, seen}
