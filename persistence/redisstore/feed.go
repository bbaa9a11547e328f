package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// The change feed of stateful queues (docs/storage.md section 10): a
// stream per queue, P:{q}:2:feed, in the queue's own slot. Shard scripts
// cannot write it on a Cluster (another slot), so they put each change in
// the shard's outbox (field "f") and the relay adds it to the feed with
// feed.lua: XADD MAXLEN n (an exact bound), skipping the outbox entries the
// queue's feed mark says another relay published already, so that per id
// the feed is in version order even when relays overlap.

// FeedWaitSlice is the longest single blocking read of a feed watcher
// (feedwait.go): a watcher whose last reader left ends within one.
const FeedWaitSlice = 250 * time.Millisecond

// feedChange is a change feed entry of the outbox.
type feedChange struct {
	entry                       string // the outbox entry's id
	id, version, kind, data, at string
	maxLen                      int64
}

// decodeFeedChange reads an outbox "f" entry: fld(id) fld(version)
// fld(kind) fld(data) fld(time) fld(maxlen).
func decodeFeedChange(s string) (feedChange, error) {
	r := &fieldReader{s: s}
	var f [6]string
	for i := range f {
		v, err := r.next()
		if err != nil {
			return feedChange{}, err
		}
		f[i] = v
	}
	n, err := strconv.ParseInt(f[5], 10, 64)
	if err != nil || n <= 0 || !r.done() {
		return feedChange{}, fmt.Errorf("%w: a change feed entry", errCorrupt)
	}
	return feedChange{id: f[0], version: f[1], kind: f[2], data: f[3], at: f[4], maxLen: n}, nil
}

// publishFeed adds the changes of a shard's outbox to the queue's feed, in
// outbox order, in one script call (feed.lua) that skips the entries
// already published. In the replicated durability mode it returns once the
// replicas have them (persistence.ErrNotReplicated otherwise).
func (s *Store) publishFeed(ctx context.Context, ref persistence.ShardRef, changes []feedChange) (int, error) {
	if len(changes) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 1+7*len(changes))
	args = append(args, strconv.Itoa(ref.Shard))
	for _, c := range changes {
		args = append(args, c.entry, c.id, c.version, c.kind, c.data, c.at, strconv.FormatInt(c.maxLen, 10))
	}
	keys := []string{s.keys.feed(ref.Queue), s.keys.feedMark(ref.Queue)}
	cmds, werr := s.runWrite(ctx, []call{{s: scriptFeed, keys: keys, args: args}})
	if cmds == nil {
		return 0, fmt.Errorf("redisstore: publish to the change feed of %s: %w", ref.Queue, werr)
	}
	n, err := cmds[0].Int()
	if err != nil {
		return 0, fmt.Errorf("redisstore: publish to the change feed of %s: %w", ref.Queue, err)
	}
	if werr != nil {
		return n, fmt.Errorf("redisstore: publish to the change feed of %s: %w", ref.Queue, werr)
	}
	return n, nil
}

// ReadFeed implements persistence.FeedStore.
func (s *Store) ReadFeed(ctx context.Context, queue, from string, limit int, wait time.Duration) ([]persistence.FeedEntry, string, error) {
	if _, err := s.shapeOf(ctx, queue); err != nil {
		return nil, "", err
	}
	if limit <= 0 || limit > 10000 {
		return nil, "", &persistence.FieldError{Field: "limit", Index: -1, Reason: "must be between 1 and 10000"}
	}
	key := s.keys.feed(queue)
	switch from {
	case "", persistence.FeedOldest:
		from = "0"
	case persistence.FeedNew:
		last, err := s.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
		if err != nil {
			return nil, "", fmt.Errorf("redisstore: read the change feed of %s: %w", queue, err)
		}
		from = "0-0"
		if len(last) == 1 {
			from = last[0].ID
		}
	default:
		if !validStreamID(from) {
			return nil, "", &persistence.FieldError{Field: "from", Index: -1, Reason: `must be "0", "$" or an entry's position`}
		}
	}
	// A waiting read never blocks in Redis on the store's client: the
	// queue's feed watcher does, on its own client, and wakes the readers
	// (feedwait.go).
	res, err := s.readFeedOnce(ctx, key, from, limit)
	if err != nil {
		return nil, from, fmt.Errorf("redisstore: read the change feed of %s: %w", queue, err)
	}
	if len(res) > 0 || wait <= 0 {
		return s.feedEntries(queue, res, from)
	}
	fw, err := s.joinFeed(ctx, key)
	if err != nil {
		return nil, from, fmt.Errorf("redisstore: read the change feed of %s: %w", queue, err)
	}
	defer s.leaveFeed(key, fw)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		changed := s.changedCh(fw)
		res, err = s.readFeedOnce(ctx, key, from, limit)
		if err != nil {
			return nil, from, fmt.Errorf("redisstore: read the change feed of %s: %w", queue, err)
		}
		if len(res) > 0 {
			return s.feedEntries(queue, res, from)
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, from, nil
		case <-ctx.Done():
			return nil, from, fmt.Errorf("redisstore: read the change feed of %s: %w", queue, ctx.Err())
		}
	}
}

// readFeedOnce reads up to limit entries after from without blocking.
func (s *Store) readFeedOnce(ctx context.Context, key, from string, limit int) ([]redis.XStream, error) {
	res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{key, from}, Count: int64(limit), Block: -1}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return res, err
}

// feedEntries decodes what readFeedOnce read and returns the position after
// it.
func (s *Store) feedEntries(queue string, res []redis.XStream, from string) ([]persistence.FeedEntry, string, error) {
	var out []persistence.FeedEntry
	for _, st := range res {
		for _, m := range st.Messages {
			e, err := feedEntryOf(m)
			if err != nil {
				return out, from, fmt.Errorf("redisstore: change feed of %s, entry %s: %w", queue, m.ID, err)
			}
			out = append(out, e)
			from = m.ID
		}
	}
	return out, from, nil
}

// feedEntryOf decodes a feed stream entry.
func feedEntryOf(m redis.XMessage) (persistence.FeedEntry, error) {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	e := persistence.FeedEntry{Pos: m.ID, ID: str("id")}
	v, err := strconv.ParseInt(str("version"), 10, 64)
	if err != nil || v <= 0 || e.ID == "" {
		return e, errCorrupt
	}
	e.Version = v
	at, err := parseScore(str("at"))
	if err != nil {
		return e, errCorrupt
	}
	e.At = persistence.FromUnixSeconds(at)
	switch str("kind") {
	case "s":
		e.Data = []byte(str("data"))
	case "h":
		e.Hash = str("data")
	case "d":
		e.Deleted = true
	default:
		return e, errCorrupt
	}
	return e, nil
}

// validStreamID reports whether s looks like a stream entry id: ms or
// ms-seq, digits only.
func validStreamID(s string) bool {
	ms, seq, found := cutDash(s)
	if !digits(ms) {
		return false
	}
	return !found || digits(seq)
}

func cutDash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func digits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
