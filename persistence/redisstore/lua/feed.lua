-- feed.lua: publish change feed entries relayed from one shard's outbox
-- into the queue's feed (docs/contract.md §11, docs/storage.md section 10),
-- each at most once and in outbox order. The feed mark holds, per shard,
-- the last outbox entry published; an entry not after it was published by
-- another relay (the owner's and an outside writer's, or an old and a new
-- owner's) and is skipped, so a late relay never publishes an old version
-- of an id after a newer one.
-- lib: none
--
-- Not a shard script: its keys are in the queue's slot ({q}), not the
-- shard's (lib/keys.lua is not used).
-- KEYS[1] P:{q}:2:feed      STREAM the queue's change feed
-- KEYS[2] P:{q}:2:feedmark  HASH   shard -> last outbox entry id published
-- ARGV[1] the shard number
-- ARGV[2..] 7 values per change, in outbox order: the outbox entry id, id,
--           version, kind, data, commit time, the feed's bound (maxlen)
--
-- Returns the number of entries published (the others were already).
-- Cost: O(changes) XADDs, each trimming the feed to its exact bound.

local function sid(s)
  local ms, seq = string.match(s, "^(%d+)-(%d+)$")
  if not ms then return tonumber(s), 0 end
  return tonumber(ms), tonumber(seq)
end

local function after(a, b)
  local ams, aseq = sid(a)
  local bms, bseq = sid(b)
  return ams > bms or (ams == bms and aseq > bseq)
end

local shard = ARGV[1]
local mark = redis.call("HGET", KEYS[2], shard)
local last, n = mark, 0
for i = 2, #ARGV, 7 do
  local entry = ARGV[i]
  if not last or after(entry, last) then
    redis.call("XADD", KEYS[1], "MAXLEN", ARGV[i + 6], "*",
      "id", ARGV[i + 1], "version", ARGV[i + 2], "kind", ARGV[i + 3], "data", ARGV[i + 4], "at", ARGV[i + 5])
    last, n = entry, n + 1
  end
end
if last and last ~= mark then redis.call("HSET", KEYS[2], shard, last) end
return n
