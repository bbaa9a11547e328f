package redisstore

import "errors"

// Errors callers branch on (errors.Is).
var (
	// ErrServerTooOld is returned by CheckServer for a Redis older than
	// 6.2 (ZADD LT, GETDEL and ZMSCORE are needed).
	ErrServerTooOld = errors.New("redisstore: Redis 6.2 or newer is required")
	// ErrEvictionPolicy is returned by CheckServer when the server may
	// evict keys: an evicted key is a lost job.
	ErrEvictionPolicy = errors.New("redisstore: maxmemory-policy must be noeviction")
	// ErrServed is returned by Downgrade while a node of this release
	// still serves a shard.
	ErrServed = errors.New("redisstore: a layout 2 node still serves the shard")

	// errCorrupt is the error of a record or batch that does not decode.
	errCorrupt = errors.New("redisstore: corrupt record")
)
