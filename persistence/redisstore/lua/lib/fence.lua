-- lib/fence.lua: the fence layout 2 writes into layout 1's lease key of every
-- shard it serves (KEYS[1]), so that a node of the previous release can no
-- longer take the shard (docs/storage.md section 8; migrate.go).
-- lib: none
--
-- A reshard (docs/storage.md section 11) replaces the fence of a shard of
-- the generation it drains with DRAIN, then with MOVED once the shard is
-- drained: nodes of this release read them as the fence (fenced) and stop
-- fetching from the shard; earlier releases, which know FENCE only, can no
-- longer take it or advance it.

local FENCE = "0/orderly-layout-2"
local DRAIN = "0/orderly-reshard-drain"
local MOVED = "0/orderly-reshard-moved"

-- fenced reports whether v, the value of layout 1's lease key, fences the
-- shard from layout 1 nodes (any of the three).
local function fenced(v)
  return v == FENCE or v == DRAIN or v == MOVED
end
