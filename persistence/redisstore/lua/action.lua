-- action.lua: the queue actions of one shard (SPEC 3.9), each bounded so that
-- a large queue is processed in several calls.
--
-- KEYS: the shard key set (lib.lua).
-- ARGV[1] key prefix
-- ARGV[2] action: "perform_now", "kill_failed", "delete_failed" or "delete"
-- ARGV[3] now (unix seconds)
-- ARGV[4] limit (ids handled per call), or for "delete" the id
-- ARGV[5] notification channel
-- ARGV[6] shard number (the notification message)
--
-- perform_now sets perform_at = now for up to limit queued jobs due later;
-- kill_failed moves up to limit queued jobs with retry_count >= 0 to the
-- morgue with all their payloads and error; delete_failed deletes them;
-- delete deletes the queued entry of one id (an in-flight one is untouched).
-- Returns the number of ids changed; a call that returns less than limit
-- finished the shard.

local action, now = ARGV[2], ARGV[3]

if action == "delete" then
  local id = ARGV[4]
  if not redis.call("ZSCORE", K.due, id) then return 0 end
  delete_queued(id)
  return 1
end

local limit = tonumber(ARGV[4])
if action == "perform_now" then
  local list = redis.call("ZRANGEBYSCORE", K.due, "(" .. now, "+inf", "LIMIT", 0, limit)
  if #list == 0 then return 0 end
  local args = {}
  for _, id in ipairs(list) do
    args[#args + 1] = now
    args[#args + 1] = id
  end
  redis.call("ZADD", K.due, "XX", unpack(args))
  redis.call("PUBLISH", ARGV[5], ARGV[6])
  return #list
end

local list = redis.call("ZRANGEBYSCORE", K.retries, 0, "+inf", "LIMIT", 0, limit)
for _, id in ipairs(list) do
  if action == "kill_failed" then
    local flat = redis.call("ZRANGE", pkey(id), 0, -1, "WITHSCORES")
    local err = redis.call("HGET", K.errors, id) or ""
    morgue_put(id, flat, err, now)
  end
  delete_queued(id)
end
return #list
