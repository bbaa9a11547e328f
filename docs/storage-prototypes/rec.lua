-- shared prototype helpers: varint-length-prefixed fields
local function f(s) local n = #s
  if n < 128 then return string.char(n) .. s end
  local out = {}
  while n >= 128 do out[#out+1] = string.char(128 + n % 128); n = math.floor(n / 128) end
  out[#out+1] = string.char(n)
  return table.concat(out) .. s
end
local function rd(s, pos)
  local n, mul = 0, 1
  while true do
    local b = string.byte(s, pos); pos = pos + 1
    if b < 128 then n = n + b * mul; break end
    n = n + (b - 128) * mul; mul = mul * 128
  end
  return string.sub(s, pos, pos + n - 1), pos + n
end
local function mkrec(flags, at, rc, fseq, score, data)
  local r = string.char(flags) .. f(at) .. f(rc)
  if fseq then r = r .. f(fseq) end
  return r .. f(score == at and "" or score) .. f(data)
end
local function parse(r)
  local flags = string.byte(r, 1)
  local at, rc, fseq, pos
  at, pos = rd(r, 2); rc, pos = rd(r, pos)
  if flags % 4 >= 2 then fseq, pos = rd(r, pos) end
  local ps = {}
  while pos <= #r do local sc, d; sc, pos = rd(r, pos); d, pos = rd(r, pos); ps[#ps+1] = {sc == "" and at or sc, d} end
  return flags, at, rc, fseq, ps
end
