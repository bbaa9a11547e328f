-- lib/notify.lua: enqueue and controls notices.
-- lib: none

-- notify publishes a notice: with SPUBLISH on a shard channel (its name
-- carries a hash tag, the script's own: sharded pub/sub on a Redis Cluster
-- of Redis 7 or later), with PUBLISH on the queue's ordinary channel
-- otherwise (docs/storage.md §2, notices). The Go side picks the channel.
local function notify(channel, message)
  if string.find(channel, "{", 1, true) then
    redis.call("SPUBLISH", channel, message)
  else
    redis.call("PUBLISH", channel, message)
  end
end
