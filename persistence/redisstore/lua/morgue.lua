-- morgue.lua: requeue or delete morgue entries of one shard (SPEC 3.8).
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] operation: "requeue", "delete" or "trim"
-- ARGV[3] now (unix seconds)
-- ARGV[4] notification channel
-- ARGV[5] shard number (the notification message)
-- ARGV[6] selection: "ids" (the ids follow), "first" (the first ARGV[7]
--         entries by id) or "before" (up to ARGV[7] entries updated before
--         ARGV[8], for retention)
-- ARGV[7] limit for "first" and "before"
-- ARGV[8..] ids for "ids"; the cut-off time for "before"
--
-- A requeued entry merges as "morgue job + queued job" (SPEC 3.2 case 3):
-- payloads united (lower score wins), perform_at = now, retry_count = -1.
-- Returns the number of entries requeued or deleted; unknown ids are skipped.

local op, now, sel = ARGV[2], ARGV[3], ARGV[6]
local list
if sel == "first" then
  list = redis.call("ZRANGE", K.morgue_ids, 0, tonumber(ARGV[7]) - 1)
elseif sel == "before" then
  list = redis.call("ZRANGEBYSCORE", K.morgue, "-inf", "(" .. ARGV[8], "LIMIT", 0, tonumber(ARGV[7]))
else
  list = {}
  for i = 8, #ARGV do list[#list + 1] = ARGV[i] end
end

local n = 0
for _, id in ipairs(list) do
  if redis.call("ZSCORE", K.morgue, id) then
    if op == "requeue" then
      local flat = redis.call("ZRANGE", mkey(id), 0, -1, "WITHSCORES")
      requeue(id, flat, "-1", now, "")
    end
    morgue_delete(id)
    n = n + 1
  end
end
if op == "requeue" and n > 0 then
  redis.call("PUBLISH", ARGV[4], ARGV[5])
end
return n
