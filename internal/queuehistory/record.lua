-- record: appends a sample to a queue's per-minute history list unless the
-- list holds a sample of the same minute or a later one, keeps the newest
-- ARGV[3] samples and sets the list's time to live.
--
-- KEYS[1] the queue's list, P:{q}:hist (newest sample first)
-- ARGV[1] the minute, unix seconds / 60 ("" = the minute of Redis TIME)
-- ARGV[2] the sample's values after its minute, separated by spaces
-- ARGV[3] the number of samples kept
-- ARGV[4] the list's time to live, in ms
-- Returns 1 when it appended, 0 when the list already had that minute.
local m = tonumber(ARGV[1])
if not m then
  local t = redis.call("TIME")
  m = math.floor(tonumber(t[1]) / 60)
end
local head = redis.call("LINDEX", KEYS[1], 0)
if head then
  local last = tonumber(string.match(head, "^(%d+)"))
  if last and last >= m then
    return 0
  end
end
redis.call("LPUSH", KEYS[1], string.format("%d", m) .. " " .. ARGV[2])
redis.call("LTRIM", KEYS[1], 0, tonumber(ARGV[3]) - 1)
redis.call("PEXPIRE", KEYS[1], ARGV[4])
return 1
