-- lib/fields.lua: fields and job records (docs/storage.md section 3).
-- lib: none
--
-- A field is a LEB128 length and that many bytes. Job record: a flags byte
-- (1 error, 2 in the fifo, 4 overflow, 8 hold, 16 payloads carry headers,
-- 32 overflow payloads may carry headers), then the fields at, rc, [fseq],
-- [err], [hold], [ovn], then the inline payloads lowest first as pairs
-- (score, data), score "" meaning "equal to at", or with flag 16 as
-- triples (score, data, headers), headers "" meaning none. Morgue records
-- have the same shape (at is updated_at, rc is empty).
--
-- Headers (docs/contract.md §10) are an opaque blob to the scripts: the
-- node encodes them (fields k1 v1 k2 v2 ..., keys sorted). A payload is the
-- table {score, data, headers}, headers nil or "" for none. An overflow
-- payload's headers follow its score key in its ovs value (8 bytes, then
-- the blob); ovs values without headers are the 8 bytes alone.
--
-- Scores and times are decimal strings, kept as sent; times computed here
-- are whole microseconds. Byte-wise comparisons never use Lua's < on
-- strings (it follows the server's locale).

local INLINE_MAX, INLINE_BYTES = 64, 4096
local CHUNK = 500 -- arguments per multi-argument command

local function fld(s)
  local n = #s
  if n < 128 then return string.char(n) .. s end
  local t = {}
  while n >= 128 do
    t[#t + 1] = string.char(128 + n % 128)
    n = math.floor(n / 128)
  end
  t[#t + 1] = string.char(n)
  return table.concat(t) .. s
end

-- rdf reads the field at pos; returns it and the position after it.
local function rdf(s, pos)
  local b = string.byte(s, pos)
  if b < 128 then return string.sub(s, pos + 1, pos + b), pos + 1 + b end
  local n, mul = 0, 1
  while true do
    b = string.byte(s, pos)
    pos = pos + 1
    if b < 128 then n = n + b * mul; break end
    n = n + (b - 128) * mul
    mul = mul * 128
  end
  return string.sub(s, pos, pos + n - 1), pos + n
end

-- bcmp compares two strings byte by byte: -1, 0 or 1.
local function bcmp(a, b)
  if a == b then return 0 end
  local la, lb = #a, #b
  local n = la < lb and la or lb
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      if x < y then return -1 end
      return 1
    end
  end
  if la < lb then return -1 end
  return 1
end

-- hdel_list deletes fields in chunks within Lua's argument limits.
local function hdel_list(key, fields)
  for i = 1, #fields, CHUNK do
    redis.call("HDEL", key, unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
  end
end

-- rec_head reads the start of a job record: flags, at, rc and fseq.
local function rec_head(s)
  local flags = string.byte(s, 1)
  local at, rc, fseq, pos
  at, pos = rdf(s, 2)
  rc, pos = rdf(s, pos)
  if flags % 4 >= 2 then fseq = rdf(s, pos) end
  return flags, at, rc, fseq
end
