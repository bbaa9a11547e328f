-- lib/fence.lua: the fence layout 2 writes into layout 1's lease key of every
-- shard it serves (KEYS[1]), so that a node of the previous release can no
-- longer take the shard (docs/storage.md section 8; migrate.go).
-- lib: none

local FENCE = "0/orderly-layout-2"
