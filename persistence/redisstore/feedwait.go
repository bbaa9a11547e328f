package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiting reads of the change feed (ReadFeed with a wait: the HTTP long
// poll, client.Feed). A blocked XREAD holds its connection for as long as
// it blocks, so many waiting readers on the store's client would take every
// connection of its pool, and leases, fetches and acknowledgements would
// wait for one (a node would lose its leases). So no waiting reader blocks
// in Redis: per queue one watcher goroutine blocks on the feed's tail, on a
// client of its own with a small pool (blockingPoolSize connections, never
// the store's), and wakes the queue's waiting readers when the feed grows;
// each reader then reads from its own position without blocking, one short
// command on the store's client. However many readers wait, the store's
// pool sees one short read per reader and new entry, and Redis one blocked
// connection per queue being watched.

// blockingPoolSize is the pool of the client the feed watchers block on: a
// watcher holds a connection FeedWaitSlice at a time, so more queues than
// connections take turns.
const blockingPoolSize = 4

// feedWatchers are the store's feed watchers, one per queue with waiting
// readers.
type feedWatchers struct {
	mu    sync.Mutex            // guards the fields
	rdb   redis.UniversalClient // the blocking client, made on first use
	own   bool                  // rdb was made here (Close closes it)
	byKey map[string]*feedWatch // feed key -> its watcher
	wg    sync.WaitGroup        // the running watchers, which Close waits for
}

// feedWatch is one feed's watcher and its readers.
type feedWatch struct {
	readers int           // readers waiting; the watcher stops at 0 (guarded by feedWatchers.mu)
	changed chan struct{} // closed when the feed grew (guarded by feedWatchers.mu)
	ready   chan struct{} // closed once the watcher knows the feed's tail
	stop    context.CancelFunc
}

// blocking returns the client the watchers block on: a copy of the store's
// client with a pool of blockingPoolSize connections (a plain, Sentinel or
// Cluster client), or the store's own client for other kinds.
func (s *Store) blocking() redis.UniversalClient {
	w := &s.feedWait
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rdb != nil {
		return w.rdb
	}
	switch c := s.rdb.(type) {
	case *redis.Client:
		o := *c.Options()
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = blockingPoolSize, 0, blockingPoolSize, 0
		w.rdb, w.own = redis.NewClient(&o), true
	case *redis.ClusterClient:
		o := *c.Options()
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = blockingPoolSize, 0, blockingPoolSize, 0
		w.rdb, w.own = redis.NewClusterClient(&o), true
	default:
		w.rdb = s.rdb
	}
	return w.rdb
}

// Close stops the feed watchers and waits for them, and closes what the
// store opened itself (the watchers' client); the client given to New stays
// open. The store must not be used after.
func (s *Store) Close() error {
	w := &s.feedWait
	w.mu.Lock()
	for _, fw := range w.byKey {
		fw.stop()
	}
	rdb, own := w.rdb, w.own
	w.rdb, w.own = nil, false
	w.mu.Unlock()
	var err error
	if own {
		// Closing the client also ends a watcher's blocked XREAD.
		if cerr := rdb.Close(); cerr != nil {
			err = fmt.Errorf("redisstore: close the feed watchers' client: %w", cerr)
		}
	}
	w.wg.Wait()
	return err
}

// joinFeed registers a waiting reader of the feed at key, starting its
// watcher if it has none, and returns once the watcher knows the feed's
// tail: a change after that wakes the reader.
func (s *Store) joinFeed(ctx context.Context, key string) (*feedWatch, error) {
	bc := s.blocking()
	w := &s.feedWait
	w.mu.Lock()
	fw := w.byKey[key]
	if fw == nil {
		wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		fw = &feedWatch{changed: make(chan struct{}), ready: make(chan struct{}), stop: stop}
		if w.byKey == nil {
			w.byKey = map[string]*feedWatch{}
		}
		w.byKey[key] = fw
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			s.watchFeed(wctx, bc, key, fw)
		}()
	}
	fw.readers++
	w.mu.Unlock()
	select {
	case <-fw.ready:
		return fw, nil
	case <-ctx.Done():
		s.leaveFeed(key, fw)
		return nil, ctx.Err()
	}
}

// leaveFeed unregisters a reader; the last one stops the watcher.
func (s *Store) leaveFeed(key string, fw *feedWatch) {
	w := &s.feedWait
	w.mu.Lock()
	defer w.mu.Unlock()
	fw.readers--
	if fw.readers == 0 {
		fw.stop()
		if w.byKey[key] == fw {
			delete(w.byKey, key)
		}
	}
}

// changedCh returns the channel closed at the feed's next change.
func (s *Store) changedCh(fw *feedWatch) <-chan struct{} {
	s.feedWait.mu.Lock()
	defer s.feedWait.mu.Unlock()
	return fw.changed
}

// watchFeed is a feed's watcher: it blocks on the feed's tail at most
// FeedWaitSlice at a time and wakes the readers when entries come after
// it. It ends when its context does (the last reader left).
func (s *Store) watchFeed(ctx context.Context, bc redis.UniversalClient, key string, fw *feedWatch) {
	tail := func() string {
		last, err := bc.XRevRangeN(ctx, key, "+", "-", 1).Result()
		if err != nil || len(last) == 0 {
			return "0-0"
		}
		return last[0].ID
	}
	last := tail()
	close(fw.ready)
	for ctx.Err() == nil {
		res, err := bc.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: 1, Block: FeedWaitSlice}).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			// The readers' own reads meet the same trouble and answer
			// it; the watcher waits a slice and tries again.
			select {
			case <-ctx.Done():
			case <-time.After(FeedWaitSlice):
			}
			continue
		}
		if n := len(res[0].Messages); n > 0 {
			last = res[0].Messages[n-1].ID
		}
		if t := tail(); t != "0-0" {
			last = t
		}
		s.feedWait.mu.Lock()
		close(fw.changed)
		fw.changed = make(chan struct{})
		s.feedWait.mu.Unlock()
	}
}
