-- shape.lua: change a queue's shape (docs/storage.md section 11) if it is
-- still the one the caller read: a compare-and-set on the queue registry.
-- lib: none
--
-- KEYS[1] the queue registry P:queues (queue -> shape)
-- ARGV[1] the queue
-- ARGV[2] the shape the caller read
-- ARGV[3] the new shape
--
-- Returns 1 when the shape was ARGV[2] and is now ARGV[3], else 0 (nothing
-- changed: someone else changed it first).
--
-- Cost: HGET, HSET.

if redis.call("HGET", KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[3])
return 1
