package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// noticeMode is how the store sends and receives its notices
// (docs/storage.md §2, "Notices").
type noticeMode int32

const (
	// noticesUnknown: not decided yet (a Cluster whose versions could not
	// be read so far).
	noticesUnknown noticeMode = iota
	// noticesClassic: PUBLISH and SUBSCRIBE on P:notify:q. Standalone
	// Redis, Sentinel, and Clusters with a master older than Redis 7.
	noticesClassic
	// noticesSharded: SPUBLISH and SSUBSCRIBE on the shard channels
	// P:{q:s}:2:notify and P:{q}:2:notify. Clusters whose masters all run
	// Redis 7 or later.
	noticesSharded
)

// shardedPubSubMajor and shardedPubSubMinor are the first Redis version
// with SPUBLISH and SSUBSCRIBE.
const shardedPubSubMajor, shardedPubSubMinor = 7, 0

// noticeMode returns how this store publishes notices. Standalone and
// Sentinel stores use ordinary pub/sub: the store accepts Redis 6.2, which
// has no sharded pub/sub, and on one master the broadcast costs nothing. A
// Cluster uses sharded pub/sub when every master runs Redis 7 or later,
// read once with INFO; when that cannot be read, this call answers classic
// and a later one asks again (a notice is a hint: a missed one costs the
// idle poll).
func (s *Store) noticeMode(ctx context.Context) noticeMode {
	m, _ := s.detectNoticeMode(ctx)
	return m
}

// detectNoticeMode is noticeMode with the error that left it undecided:
// a subscriber must not settle for the ordinary channel on a Cluster that
// publishes on the shard channels.
func (s *Store) detectNoticeMode(ctx context.Context) (noticeMode, error) {
	if m := noticeMode(s.notices.Load()); m != noticesUnknown {
		return m, nil
	}
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		s.notices.Store(int32(noticesClassic))
		return noticesClassic, nil
	}
	var old atomic.Bool
	err := c.ForEachMaster(context.WithValue(ctx, uncounted{}, true), func(ctx context.Context, m *redis.Client) error {
		raw, err := m.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if !versionAtLeast(parseInfo(raw)["redis_version"], shardedPubSubMajor, shardedPubSubMinor) {
			old.Store(true)
		}
		return nil
	})
	if err != nil {
		return noticesClassic, fmt.Errorf("redisstore: read the masters' versions: %w", err)
	}
	m := noticesSharded
	if old.Load() {
		m = noticesClassic
	}
	s.notices.Store(int32(m))
	return m, nil
}

// noticeChannel returns the channel a shard script publishes the shard's
// enqueue notice on (the message is the shard number). The scripts SPUBLISH on a channel that carries a
// hash tag (a shard channel, in the script's own slot) and PUBLISH on any
// other (lua/lib/notify.lua).
func (s *Store) noticeChannel(ctx context.Context, queue string, shard int) string {
	if s.noticeMode(ctx) == noticesSharded {
		return s.keys.shardChannel(queue, shard)
	}
	return s.keys.channel(queue)
}

// publishControls tells the queue's subscribers that its controls changed.
func (s *Store) publishControls(ctx context.Context, queue string) error {
	if s.noticeMode(ctx) == noticesSharded {
		return s.rdb.SPublish(ctx, s.keys.ctlChannel(queue), controlsMessage).Err()
	}
	return s.rdb.Publish(ctx, s.keys.channel(queue), controlsMessage).Err()
}
