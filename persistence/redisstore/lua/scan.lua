-- scan.lua: one chunk of a shard's records hash, for the listings in id
-- order (docs/storage.md: no per-job index of ids is kept). Read only.
-- lib: keys fields
--
-- KEYS: the shard key set (lib/keys.lua).
-- ARGV[1] "q" for queued jobs, "m" for the morgue
-- ARGV[2] HSCAN cursor ("0" to start)
-- ARGV[3] HSCAN count
-- ARGV[4] lower bound on ids ("" = none)
-- ARGV[5] "1" when the lower bound is inclusive
-- ARGV[6] upper bound on ids ("" = none)
-- ARGV[7] "1" when the upper bound is inclusive
-- ARGV[8] "1" to keep fresh jobs only (retry_count -1)
--
-- Returns {next cursor, id, record, id, record, ...}: the records of the
-- chunk whose ids are within the bounds. The client keeps the best ones of
-- all chunks and tightens the bounds as it goes.
--
-- Cost: O(ARGV[3]).

local key = K.jobs
if ARGV[1] == "m" then key = K.morgue end

-- Lua compares strings with the server's collation (strcoll). Under the C
-- locale (and C.UTF-8) that is byte order, and the comparison runs in C;
-- these probes tell the usual other collations apart, which then fall
-- back to the byte-by-byte comparison of lib/fields.lua (bcmp).
local fast = true
for _, p in ipairs({{"B", "a"}, {"A", "a"}, {"-", "a"}, {"a-b", "ab"}, {"a b", "ab"},
    {"f", "\195\169"}, {"\1", "A"}, {"Z", "a"}, {"a", "b"}}) do
  if not (p[1] < p[2]) or p[2] < p[1] then fast = false end
end
local function cmp(a, b)
  if not fast then return bcmp(a, b) end
  if a == b then return 0 end
  if a < b then return -1 end
  return 1
end
local lo, lo_in, hi, hi_in = ARGV[4], ARGV[5] == "1", ARGV[6], ARGV[7] == "1"
local fresh = ARGV[8] == "1"
local r = redis.call("HSCAN", key, ARGV[2], "COUNT", tonumber(ARGV[3]))
local out = {r[1]}
local kv = r[2]
for i = 1, #kv, 2 do
  local id = kv[i]
  local ok = true
  if lo ~= "" then
    local c = cmp(id, lo)
    ok = c > 0 or (c == 0 and lo_in)
  end
  if ok and hi ~= "" then
    local c = cmp(id, hi)
    ok = c < 0 or (c == 0 and hi_in)
  end
  if ok and fresh then
    local rec = kv[i + 1]
    local _, pos = rdf(rec, 2)
    ok = rdf(rec, pos) == "-1"
  end
  if ok then
    out[#out + 1] = id
    out[#out + 1] = kv[i + 1]
  end
end
return out
