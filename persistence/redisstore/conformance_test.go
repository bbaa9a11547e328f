package redisstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/storetest"
)

// TestConformanceRedis runs the conformance suite on the package's real
// redis-server (or, without one, on the fallback redistest announces).
func TestConformanceRedis(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T, now func() time.Time) storetest.Store {
			db := redistest.New(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return s
		},
		Elapse: func(t *testing.T, d time.Duration) { time.Sleep(d) },
		Light:  redistest.New(t).Embedded,
		Lossy: func(t *testing.T, now func() time.Time) (storetest.Store, func(), func()) {
			srv := redistest.NewServer(t, redistest.Options{})
			s, err := redisstore.New(srv.Client(t), &redisstore.Config{Now: now})
			require.NoError(t, err)
			return s, func() { srv.Snapshot(t) }, func() { srv.Rollback(t) }
		},
		Upgrade: func(t *testing.T, now func() time.Time) (storetest.Store, storetest.Store) {
			db := redistest.New(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return newV1Store(db.Client, db.Prefix, now), s
		},
	})
}

// coreStore is a store with only the roles every store under test needs
// (storetest.Store), as a new implementation has before its operator
// actions and its stateful queues' outside access: the suite skips the
// cases of persistence.Admin, StateStore and FeedStore, and its model
// test makes no operator action.
type coreStore struct{ storetest.Store }

// TestConformanceCoreRoles runs the suite on a store that shows only the
// roles every store needs.
func TestConformanceCoreRoles(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T, now func() time.Time) storetest.Store {
			db := redistest.New(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return coreStore{s}
		},
		Elapse: func(t *testing.T, d time.Duration) { time.Sleep(d) },
		Light:  redistest.New(t).Embedded,
	})
}

// TestConformanceCluster runs the suite on a real 3-master Redis Cluster:
// every script must touch one slot and declare its keys.
func TestConformanceCluster(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T, now func() time.Time) storetest.Store {
			db := redistest.NewCluster(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return s
		},
		Elapse: func(t *testing.T, d time.Duration) { time.Sleep(d) },
		Upgrade: func(t *testing.T, now func() time.Time) (storetest.Store, storetest.Store) {
			db := redistest.NewCluster(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return newV1Store(db.Client, db.Prefix, now), s
		},
	})
}

// TestConformanceSentinel runs the suite on a master found through
// Sentinel (a master, one replica, three sentinels).
func TestConformanceSentinel(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T, now func() time.Time) storetest.Store {
			db := redistest.NewSentinel(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return s
		},
		Elapse: func(t *testing.T, d time.Duration) { time.Sleep(d) },
		Upgrade: func(t *testing.T, now func() time.Time) (storetest.Store, storetest.Store) {
			db := redistest.NewSentinel(t)
			s, err := redisstore.New(db.Client, &redisstore.Config{Prefix: db.Prefix, Now: now})
			require.NoError(t, err)
			return newV1Store(db.Client, db.Prefix, now), s
		},
	})
}

// TestConformanceEmbedded runs the same suite on miniredis, the embedded
// store of the quick start.
func TestConformanceEmbedded(t *testing.T) {
	mr := miniredis.NewMiniRedis()
	require.NoError(t, mr.Start())
	t.Cleanup(mr.Close)
	var mu sync.Mutex // serializes FastForward, guards own
	// own holds the servers of the cases that need a clock of their own:
	// the cases run in parallel and each one's Elapse moves the shared
	// server's clock, which would end a case's short lease under it.
	own := map[*testing.T]*miniredis.Miniredis{}
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T, now func() time.Time) storetest.Store {
			c := redis.NewClient(&redis.Options{Addr: mr.Addr(), Protocol: 2})
			t.Cleanup(func() { c.Close() })
			s, err := redisstore.New(c, &redisstore.Config{Prefix: redistest.NewPrefix(t), Now: now})
			require.NoError(t, err)
			return s
		},
		Elapse: func(t *testing.T, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if m := own[t]; m != nil {
				m.FastForward(d)
				return
			}
			mr.FastForward(d)
		},
		Light: true,
		Upgrade: func(t *testing.T, now func() time.Time) (storetest.Store, storetest.Store) {
			m := miniredis.NewMiniRedis()
			require.NoError(t, m.Start())
			mu.Lock()
			own[t] = m
			mu.Unlock()
			t.Cleanup(func() {
				mu.Lock()
				delete(own, t)
				mu.Unlock()
				m.Close()
			})
			c := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2})
			t.Cleanup(func() { c.Close() })
			prefix := redistest.NewPrefix(t)
			s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Now: now})
			require.NoError(t, err)
			return newV1Store(c, prefix, now), s
		},
	})
}
