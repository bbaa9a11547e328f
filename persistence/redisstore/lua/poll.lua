-- poll.lua: report which of several shards an owner's Advance could find
-- work in now: a node's idle poll, one call for all its idle shards on a
-- server (docs/storage.md §5). It only reads; it takes no lease.
-- lib: clock fields
--
-- KEYS, POLL_KEYS (14) per shard, shard i's from KEYS[14 * (i - 1) + 1]:
--   +1 2:fifo  +2 2:jobs  +3 2:later  +4 2:timers  +5 2:outbox
--   +6 2:inflight  +7 2:outcome  +8 layout 1's due  +9 layout 1's morgue
--   +10 layout 1's stats  +11 layout 1's inflight  +12..14 2:p2, 2:p3, 2:p4
-- The keys span slots: standalone Redis and Sentinel only (on a Cluster,
-- one call per shard, in one pipeline per master).
-- ARGV[1] now ("" = Redis TIME; set only by the test seam)
--
-- A shard has work (what advance.lua would act on) when the fifo's head is
-- due, or stale (the Advance trims it); an entry of later or of 2:p2..2:p4
-- is due (retries, delayed jobs, ids of priority 2 to 4); a timer is due; the outbox holds entries to relay; an
-- in-flight record or an unconfirmed dead report waits; or layout 1 data
-- waits to be drained. When in doubt it reports work: the answer may name
-- a shard that has nothing to hand over, never leave one out.
--
-- Returns the list of the indexes (from 1) of the shards with work, in
-- order.
--
-- Cost: O(shards): one read per shard that holds none of these keys (most
-- idle shards), at most ten otherwise; no write.

init_clock(ARGV[1])
local POLL_KEYS = 14
local out = {}
for i = 1, #KEYS / POLL_KEYS do
  local b = POLL_KEYS * (i - 1)
  -- Most idle shards hold none of these keys: one command tells. (The
  -- jobs hash is left out: the Advance reaches queued jobs only through
  -- the fifo and later.)
  local work = redis.call("EXISTS", KEYS[b + 1], KEYS[b + 3], KEYS[b + 4], KEYS[b + 5], KEYS[b + 6], KEYS[b + 7],
    KEYS[b + 8], KEYS[b + 9], KEYS[b + 10], KEYS[b + 11], KEYS[b + 12], KEYS[b + 13], KEYS[b + 14]) > 0
  if work then
    work = redis.call("EXISTS", KEYS[b + 6], KEYS[b + 7], KEYS[b + 8], KEYS[b + 9], KEYS[b + 10], KEYS[b + 11]) > 0
    if not work then
      local e = redis.call("LINDEX", KEYS[b + 1], 0)
      if e then
        -- Like the Advance: a head whose record moved on is stale, and a
        -- valid head not due yet holds the fifo back.
        local c = string.find(e, ":", 1, true)
        local s = c and redis.call("HGET", KEYS[b + 2], string.sub(e, c + 1))
        work = true
        if s then
          local _, at, _, fseq = rec_head(s)
          work = fseq ~= string.sub(e, 1, c - 1) or tonumber(at) <= NOWN
        end
      end
    end
    if not work then
      work = #redis.call("ZRANGEBYSCORE", KEYS[b + 3], "-inf", NOW, "LIMIT", 0, 1) > 0
    end
    for _, z in ipairs({4, 12, 13, 14}) do
      if work then break end
      work = #redis.call("ZRANGEBYSCORE", KEYS[b + z], "-inf", NOW, "LIMIT", 0, 1) > 0
    end
    if not work then
      work = redis.call("XLEN", KEYS[b + 5]) > 0
    end
  end
  if work then out[#out + 1] = i end
end
return out
