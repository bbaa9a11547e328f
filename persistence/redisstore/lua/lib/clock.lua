-- lib/clock.lua: the script's "now": NOW (decimal seconds, as sent or from
-- Redis TIME), NOWN (the number) and NOW_US (whole microseconds).
-- lib: none

local NOW, NOW_US, NOWN

-- fmt_us formats whole microseconds as decimal seconds, shortest form.
local function fmt_us(us)
  local sec = math.floor(us / 1000000)
  local frac = us - sec * 1000000
  local s = string.format("%.0f", sec)
  if frac == 0 then return s end
  local f = string.format("%.0f", frac)
  f = string.rep("0", 6 - #f) .. f
  f = string.gsub(f, "0+$", "")
  return s .. "." .. f
end

-- init_clock sets NOW from an explicit time (the test seam) or Redis TIME.
local function init_clock(arg)
  if arg ~= nil and arg ~= "" then
    NOW = arg
    NOWN = tonumber(arg)
    NOW_US = math.floor(NOWN * 1000000 + 0.5)
  else
    local t = redis.call("TIME")
    NOW_US = tonumber(t[1]) * 1000000 + tonumber(t[2])
    NOW = t[1] .. "." .. string.rep("0", 6 - #t[2]) .. t[2]
    NOWN = tonumber(NOW)
  end
end
