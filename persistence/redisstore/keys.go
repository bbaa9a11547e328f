package redisstore

import (
	"strconv"
	"strings"
)

// keyspace builds every Redis key and channel name of the store. Nothing else
// in the package spells a key. docs/storage.md describes what each key holds.
//
// For prefix P, queue q and shard s (tag T = "{q:s}"):
//
//	P:queues     HASH   queue name -> shard count
//	P:feeds      HASH   stateful queue name -> feed_max_len ("0": no feed)
//	P:layout     STRING the layout version ("2")
//	P:store_id   STRING the store's identity (random, created once)
//	P:notify:q   channel: enqueue notices (message: shard number),
//	             controls notices (message: "ctl") and cancel notices
//	             ("cx:<shard>:<id>"), ordinary pub/sub
//	P:T:2:notify shard channel (sharded pub/sub, Redis Cluster >= 7):
//	             the shard's enqueue notices (message: shard number) and
//	             cancel notices ("cx:<shard>:<id>")
//	P:{q}:2:notify shard channel (sharded pub/sub, Redis Cluster >= 7):
//	             the queue's controls notices (message: "ctl")
//	P:{q}:2:ctl  HASH   queue-wide controls: paused
//	P:{q}:2:permits ZSET holder#i -> expiry: max_concurrency permits
//	P:{q}:2:rate HASH   tokens, at: the rate_limit token bucket
//	P:{q}:2:feed STREAM the change feed of a stateful queue
//	P:{q}:2:feedmark HASH shard -> last outbox entry published to the feed
//	P:{orderly}:2:ticks HASH periodic job name -> last tick (ms)
//	P:T:lease  P:T:epoch                                  (shared with layout 1)
//	P:T:2:lease  P:T:2:jobs  P:T:2:fifo  P:T:2:later  P:T:2:retries
//	P:T:2:ovo  P:T:2:ovs  P:T:2:inflight  P:T:2:meta  P:T:2:morgue  P:T:2:mat
//	P:T:2:outcome  P:T:2:state  P:T:2:timers  P:T:2:outbox  (stateful queues)
//	P:T:2:dedup  ZSET dedup_key -> expiry (queues with a dedup_window)
//	P:T:2:fin  P:T:2:fat  P:T:2:att  P:T:2:aat  (finished ids, retain_finished)
//	P:T:2:p2  P:T:2:p3  P:T:2:p4  ZSET id -> due time of queued ids of priority 2..4
//	P:T:due ... P:T:morgue_errors, P:T:p:<id>, P:T:m:<id>  (layout 1, read
//	while a store written by layout 1 is upgraded)
//
// The hash tag makes all keys of a shard one Redis Cluster slot, so that each
// script touches a single slot. Queue names cannot contain '{', '}' or ':'
// (persistence.ValidateQueueName), and the prefix cannot contain braces, so
// the first braces of a key are always the shard's tag whatever the id holds.
type keyspace struct {
	prefix string
}

// shardKeys are the fixed keys of one shard, in the order the scripts expect
// them as KEYS (lua/lib/keys.lua), plus the prefix of layout 1's per-id keys.
type shardKeys struct {
	keys   []string
	boxed  []any // keys as command arguments (call.boxed)
	idBase string
}

// Indexes into shardKeys.keys.
const (
	kV1Lease = iota
	kEpoch
	kLease
	kJobs
	kFifo
	kLater
	kRetries
	kOvo
	kOvs
	kInflight
	kMeta
	kMorgue
	kMat
	kOutcome
	kV1Due
	kV1IDs
	kV1Retries
	kV1Errors
	kV1Inflight
	kV1Stats
	kV1Morgue
	kV1MorgueIDs
	kV1MorgueErrors
	kState
	kTimers
	kOutbox
	kDedup
	kFin
	kFat
	kAtt
	kAat
	kP2
	kP3
	kP4
	numShardKeys
)

var shardKeyNames = [numShardKeys]string{
	kV1Lease:        "lease",
	kEpoch:          "epoch",
	kLease:          "2:lease",
	kJobs:           "2:jobs",
	kFifo:           "2:fifo",
	kLater:          "2:later",
	kRetries:        "2:retries",
	kOvo:            "2:ovo",
	kOvs:            "2:ovs",
	kInflight:       "2:inflight",
	kMeta:           "2:meta",
	kMorgue:         "2:morgue",
	kMat:            "2:mat",
	kOutcome:        "2:outcome",
	kV1Due:          "due",
	kV1IDs:          "ids",
	kV1Retries:      "retries",
	kV1Errors:       "errors",
	kV1Inflight:     "inflight",
	kV1Stats:        "stats",
	kV1Morgue:       "morgue",
	kV1MorgueIDs:    "morgue_ids",
	kV1MorgueErrors: "morgue_errors",
	kState:          "2:state",
	kTimers:         "2:timers",
	kOutbox:         "2:outbox",
	kDedup:          "2:dedup",
	kFin:            "2:fin",
	kFat:            "2:fat",
	kAtt:            "2:att",
	kAat:            "2:aat",
	kP2:             "2:p2",
	kP3:             "2:p3",
	kP4:             "2:p4",
}

func (k keyspace) queues() string { return k.prefix + ":queues" }

// feeds is the registry of change feed bounds: queue -> feed_max_len of a
// stateful queue ("0": no feed), written by RegisterQueue, read by outside
// compare-and-set writes (docs/storage.md §10).
func (k keyspace) feeds() string { return k.prefix + ":feeds" }

// feed is the queue's change feed stream (docs/storage.md §10), in the
// queue's own slot ({q}).
func (k keyspace) feed(queue string) string { return k.prefix + ":{" + queue + "}:2:feed" }

// feedMark is the queue's feed mark (docs/storage.md §10): shard -> the
// last outbox entry of that shard published to the feed, in the feed's
// slot so that the publish script updates it with the feed.
func (k keyspace) feedMark(queue string) string { return k.prefix + ":{" + queue + "}:2:feedmark" }

func (k keyspace) layout() string { return k.prefix + ":layout" }

// storeID is the key of the store's identity (identity.go).
func (k keyspace) storeID() string { return k.prefix + ":store_id" }

// ctl is the queue-wide control hash (docs/storage.md §2, §9), in the
// queue's own slot ({q}), never touched by a shard script.
func (k keyspace) ctl(queue string) string { return k.prefix + ":{" + queue + "}:2:ctl" }

// permits is the queue's max_concurrency permits (docs/storage.md §2, §9).
func (k keyspace) permits(queue string) string { return k.prefix + ":{" + queue + "}:2:permits" }

// rate is the queue's rate_limit token bucket (docs/storage.md §2, §9).
func (k keyspace) rate(queue string) string { return k.prefix + ":{" + queue + "}:2:rate" }

// ticks is the last tick of each periodic job (docs/storage.md §2, §9),
// one key for the store in its own slot.
func (k keyspace) ticks() string { return k.prefix + ":{orderly}:2:ticks" }

// channel is the queue's ordinary pub/sub channel: every notice of the
// queue on standalone Redis, Sentinel and Clusters older than Redis 7
// (docs/storage.md §2).
func (k keyspace) channel(queue string) string { return k.prefix + ":notify:" + queue }

// shardChannel is the shard channel of one (queue, shard) for sharded
// pub/sub: it carries the shard's tag, so a shard script can SPUBLISH on it
// (same slot as its keys), and its subscribers talk to the shard's master.
func (k keyspace) shardChannel(queue string, shard int) string {
	return k.prefix + ":{" + queue + ":" + strconv.Itoa(shard) + "}:2:notify"
}

// ctlChannel is the queue's shard channel for controls notices under
// sharded pub/sub, in the queue's own slot like P:{q}:2:ctl.
func (k keyspace) ctlChannel(queue string) string { return k.prefix + ":{" + queue + "}:2:notify" }

// queueOfChannel returns the queue a notification channel belongs to, for
// any of the three kinds of channel.
func (k keyspace) queueOfChannel(ch string) (string, bool) {
	if q, ok := strings.CutPrefix(ch, k.prefix+":notify:"); ok {
		return q, true
	}
	tag, ok := strings.CutPrefix(ch, k.prefix+":{")
	if !ok {
		return "", false
	}
	tag, ok = strings.CutSuffix(tag, "}:2:notify")
	if !ok {
		return "", false
	}
	q, _, _ := strings.Cut(tag, ":")
	return q, q != ""
}

func (k keyspace) shard(queue string, shard int) shardKeys {
	base := k.prefix + ":{" + queue + ":" + strconv.Itoa(shard) + "}:"
	keys := make([]string, numShardKeys)
	boxed := make([]any, numShardKeys)
	for i, name := range shardKeyNames {
		keys[i] = base + name
		boxed[i] = keys[i]
	}
	return shardKeys{keys: keys, boxed: boxed, idBase: base}
}

// v1Payloads is layout 1's key of an id's queued payloads.
func (s shardKeys) v1Payloads(id string) string { return s.idBase + "p:" + id }

// v1Morgue is layout 1's key of an id's morgue payloads.
func (s shardKeys) v1Morgue(id string) string { return s.idBase + "m:" + id }

// with returns the shard's keys followed by extra keys.
func (s shardKeys) with(extra ...string) []string {
	out := make([]string, 0, len(s.keys)+len(extra))
	out = append(out, s.keys...)
	return append(out, extra...)
}
