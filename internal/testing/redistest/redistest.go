// Package redistest gives tests a real Redis: a throwaway redis-server per
// test package on a free port in a temporary directory, a key prefix per test
// so that tests run in parallel without flushing anything, and dedicated
// servers that can be killed and restarted for durability tests.
//
// When no redis-server binary is found and ORDERLY_REQUIRE_REDIS is unset,
// the shared server falls back to the embedded in-memory miniredis and says
// so; CI sets ORDERLY_REQUIRE_REDIS=1, so there a missing binary fails the
// tests instead.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
package redistest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/orderlyhq/orderly/internal/redisserver"
)

// EnvRequire names the environment variable that forbids the miniredis
// fallback.
const EnvRequire = "ORDERLY_REQUIRE_REDIS"

// EnvBinary names the environment variable that points at a redis-server
// binary other than the one on PATH.
const EnvBinary = redisserver.EnvBinary

var (
	sharedMu      sync.Mutex // guards shared, sharedMR, sharedCluster and atExit
	atExit        []func()
	shared        *redisserver.Server
	sharedMR      *miniredis.Miniredis
	sharedCluster *redisserver.Cluster
	sharedSent    *redisserver.SentinelSet
	prefixSeq     atomic.Int64
)

// Main runs the package's tests, stops the shared server and then checks
// that no goroutine leaked. Extra goleak options name goroutines that may
// legitimately outlive the tests.
func Main(m *testing.M, opts ...goleak.Option) {
	// A proxy's toxic (NewProxy, toxiproxy v2.5) can stay blocked on its
	// output channel for good when the link's writer quit first (the
	// destination closed while bytes were on their way): the test proxy's
	// own goroutine, never the code under test's; so can the link's reader,
	// which feeds that toxic.
	opts = append(opts, goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read"))
	code := m.Run()
	sharedMu.Lock()
	for _, f := range atExit {
		f()
	}
	if shared != nil {
		shared.Stop()
		shared.Close()
		shared = nil
	}
	if sharedMR != nil {
		sharedMR.Close()
		sharedMR = nil
	}
	if sharedCluster != nil {
		sharedCluster.Close()
		sharedCluster = nil
	}
	if sharedSent != nil {
		sharedSent.Close()
		sharedSent = nil
	}
	sharedMu.Unlock()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak after tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// AtExit registers f to run after the package's tests, before the goroutine
// check (for example to remove a built binary).
func AtExit(f func()) {
	sharedMu.Lock()
	atExit = append(atExit, f)
	sharedMu.Unlock()
}

// DB is a test's view of the package's shared server.
type DB struct {
	// Addr is host:port of the server.
	Addr string
	// Prefix is a key prefix no other test uses.
	Prefix string
	// Client is a client of the server, closed when the test ends.
	Client *redis.Client
	// Embedded reports that the server is the in-memory fallback.
	Embedded bool
}

// Binary returns the redis-server binary to use, or "" when there is none.
func Binary() string { return redisserver.Binary() }

// Required reports whether the environment forbids the embedded fallback.
func Required() bool {
	v := os.Getenv(EnvRequire)
	return v != "" && v != "0" && v != "false"
}

// New returns the package's shared server, started on first use, with a
// fresh key prefix for the calling test.
func New(t testing.TB) *DB {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	db := &DB{Prefix: NewPrefix(t)}
	switch {
	case shared != nil:
		db.Addr = shared.Addr()
	case sharedMR != nil:
		db.Addr, db.Embedded = sharedMR.Addr(), true
	case Binary() != "":
		s, err := redisserver.Start(Options{})
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		shared = s
		db.Addr = s.Addr()
	case Required():
		t.Fatalf("redistest: no redis-server binary found and %s is set; install redis-server (Debian: apt-get install redis-server)", EnvRequire)
	default:
		fmt.Fprintln(os.Stderr, "redistest: redis-server not found; falling back to the embedded miniredis (set "+EnvRequire+"=1 to forbid this)")
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			t.Fatalf("redistest: start miniredis: %v", err)
		}
		sharedMR = mr
		db.Addr, db.Embedded = mr.Addr(), true
	}
	db.Client = redis.NewClient(&redis.Options{Addr: db.Addr})
	t.Cleanup(func() { db.Client.Close() })
	return db
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// NewPrefix returns a key prefix unique in this process, readable in
// redis-cli: "t<n>-<test name>".
func NewPrefix(t testing.TB) string {
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	return "t" + strconv.FormatInt(prefixSeq.Add(1), 10) + "-" + name
}

// Options configure a dedicated server.
type Options = redisserver.Options

// Server is a redis-server process owned by a test.
type Server struct {
	*redisserver.Server
}

// NewServer starts a dedicated redis-server for the calling test; it is
// killed and its directory removed when the test ends. Tests that need one
// skip when no binary is installed (unless ORDERLY_REQUIRE_REDIS is set,
// which fails them).
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if Binary() == "" {
		if Required() {
			t.Fatalf("redistest: no redis-server binary found and %s is set", EnvRequire)
		}
		t.Skip("redistest: redis-server not installed; this test needs a real server")
	}
	s, err := redisserver.Start(opts)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Close)
	return &Server{s}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) { return redisserver.FreePort() }

// ClusterDB is a test's view of the package's shared Redis Cluster (three
// masters started with redis-cli --cluster create).
type ClusterDB struct {
	// Addrs are the masters' host:port.
	Addrs []string
	// Prefix is a key prefix no other test uses.
	Prefix string
	// Client is a cluster client, closed when the test ends.
	Client *redis.ClusterClient
}

// NewCluster returns the package's shared 3-master Redis Cluster, started
// on first use, with a fresh key prefix for the calling test. Without a
// redis-server or redis-cli binary it skips the test, unless
// ORDERLY_REQUIRE_REDIS is set, which fails it.
func NewCluster(t testing.TB) *ClusterDB {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedCluster == nil {
		missing := ""
		switch {
		case Binary() == "":
			missing = "redis-server"
		case redisserver.CLI() == "":
			missing = "redis-cli"
		}
		if missing != "" {
			if Required() {
				t.Fatalf("redistest: no %s binary found and %s is set; a Redis Cluster needs it", missing, EnvRequire)
			}
			t.Skipf("redistest: %s not installed; this test needs a real Redis Cluster (set %s=1 to fail instead)", missing, EnvRequire)
		}
		c, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: 3})
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		sharedCluster = c
	}
	db := &ClusterDB{Addrs: sharedCluster.Addrs(), Prefix: NewPrefix(t)}
	db.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: db.Addrs})
	t.Cleanup(func() { db.Client.Close() })
	return db
}

// SentinelDB is a test's view of the package's shared Sentinel set (a
// master, one replica, three sentinels).
type SentinelDB struct {
	// URL is the set's redis+sentinel:// URL.
	URL string
	// Prefix is a key prefix no other test uses.
	Prefix string
	// Client is a Sentinel-backed client of the master, closed when the
	// test ends.
	Client *redis.Client
}

// NewSentinel returns the package's shared Sentinel set, started on first
// use, with a fresh key prefix for the calling test. Without a
// redis-server binary it skips the test, unless ORDERLY_REQUIRE_REDIS is
// set, which fails it. Tests that kill servers start their own set with
// redisserver.StartSentinel.
func NewSentinel(t testing.TB) *SentinelDB {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedSent == nil {
		if Binary() == "" {
			if Required() {
				t.Fatalf("redistest: no redis-server binary found and %s is set; a Sentinel set needs it", EnvRequire)
			}
			t.Skipf("redistest: redis-server not installed; this test needs a real Sentinel set (set %s=1 to fail instead)", EnvRequire)
		}
		set, err := redisserver.StartSentinel(redisserver.SentinelOptions{})
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		sharedSent = set
	}
	db := &SentinelDB{URL: sharedSent.URL(), Prefix: NewPrefix(t)}
	db.Client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sharedSent.MasterName(), SentinelAddrs: sharedSent.SentinelAddrs()})
	t.Cleanup(func() { db.Client.Close() })
	return db
}

// Client returns a new client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// Kill stops the server with SIGKILL: what was not written to the AOF is lost.
func (s *Server) Kill(t testing.TB) { s.Server.Kill() }

// Snapshot makes the server save its data now (SAVE); Rollback then brings
// it back to that point, as a Redis that lost its last writes would come
// back (a restart with appendfsync everysec, a promoted replica that lagged).
// It needs a server without AOF.
func (s *Server) Snapshot(t testing.TB) {
	t.Helper()
	c := s.Client(t)
	if err := c.Save(context.Background()).Err(); err != nil {
		t.Fatalf("redistest: SAVE: %v", err)
	}
}

// Rollback kills the server and starts it again from its last Snapshot: the
// writes since are lost.
func (s *Server) Rollback(t testing.TB) {
	t.Helper()
	s.Restart(t)
}

// Stop stops the server gracefully (SIGTERM).
func (s *Server) Stop(t testing.TB) { s.Server.Stop() }

// Start starts a stopped server again on the same port and directory, so it
// reloads its AOF.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.Server.Restart(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

// Restart kills the server and starts it again.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill(t)
	s.Start(t)
}
