-- lib/guard.lua: the reshard guard of the scripts that act on ids from
-- outside their shard's owner (state writes, actions, the morgue's).
-- lib: keys

-- reshard_guard returns an error reply when a reshard drains the shard
-- ("RESHARDING": an id's data may be on its way to its new shard, in part)
-- or drained it ("RESHARDED": the caller's view of the queue is stale),
-- and nil when the script may go on (docs/storage.md section 11).
local function reshard_guard()
  local xs = redis.call("HGET", K.meta, "xs")
  if xs == "d" or xs == "s" then
    return redis.error_reply("RESHARDING the shard is being resharded")
  end
  if xs == "m" then return redis.error_reply("RESHARDED the shard is no longer the id's") end
  return nil
end
