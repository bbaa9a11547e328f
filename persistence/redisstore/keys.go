package redisstore

import (
	"strconv"
	"strings"
)

// keyspace builds every Redis key and channel name of the store. Nothing else
// in the package spells a key.
//
// Layout, for prefix P, queue q and shard s (tag T = "{q:s}"):
//
//	P:queues                HASH   queue name -> shard count
//	P:notify:q              channel: enqueue notices (message: shard number)
//	P:T:lease  P:T:epoch  P:T:due  P:T:ids  P:T:retries  P:T:errors
//	P:T:inflight  P:T:stats  P:T:morgue  P:T:morgue_ids  P:T:morgue_errors
//	P:T:p:<id>              ZSET   queued payloads of one id
//	P:T:m:<id>              ZSET   morgue payloads of one id
//
// The hash tag makes all keys of a shard one Redis Cluster slot, so that each
// script touches a single slot. Queue names cannot contain '{', '}' or ':'
// (persistence.ValidateQueueName), and the prefix cannot contain braces, so
// the first braces of a key are always the shard's tag whatever the id holds.
type keyspace struct {
	prefix string
}

// shardKeys are the fixed keys of one shard, in the order the scripts expect
// them as KEYS (lua/lib.lua), plus the prefix of its per-id keys.
type shardKeys struct {
	keys   []string
	idBase string
}

// Indexes into shardKeys.keys.
const (
	kLease = iota
	kEpoch
	kDue
	kIDs
	kRetries
	kErrors
	kInflight
	kStats
	kMorgue
	kMorgueIDs
	kMorgueErrors
	numShardKeys
)

var shardKeyNames = [numShardKeys]string{
	kLease:        "lease",
	kEpoch:        "epoch",
	kDue:          "due",
	kIDs:          "ids",
	kRetries:      "retries",
	kErrors:       "errors",
	kInflight:     "inflight",
	kStats:        "stats",
	kMorgue:       "morgue",
	kMorgueIDs:    "morgue_ids",
	kMorgueErrors: "morgue_errors",
}

func (k keyspace) queues() string { return k.prefix + ":queues" }

func (k keyspace) channel(queue string) string { return k.prefix + ":notify:" + queue }

// queueOfChannel returns the queue a notification channel belongs to.
func (k keyspace) queueOfChannel(ch string) (string, bool) {
	return strings.CutPrefix(ch, k.prefix+":notify:")
}

func (k keyspace) shard(queue string, shard int) shardKeys {
	base := k.prefix + ":{" + queue + ":" + strconv.Itoa(shard) + "}:"
	keys := make([]string, numShardKeys)
	for i, name := range shardKeyNames {
		keys[i] = base + name
	}
	return shardKeys{keys: keys, idBase: base}
}

func (s shardKeys) payloads(id string) string { return s.idBase + "p:" + id }
