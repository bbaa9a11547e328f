// Package webtest serves Orderly's HTTP API for tests, in the shape of
// net/http/httptest: NewServer starts a web.Server on 127.0.0.1 over a real
// store (the package's redis-server through redistest, under a key prefix
// of the test's own) whose clock is simulated, and closes it when the test
// ends. The web and CLI tests share it.
package webtest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
)

// T0 is where the clock of a Server starts: a round number of unix seconds
// (2023-11-14T22:13:20Z).
var T0 = time.Unix(1_700_000_000, 0)

// Server is the HTTP API of a test, listening on 127.0.0.1:0.
type Server struct {
	*httptest.Server
	// API is the API the server runs (behind WithHandler's wrapper, if
	// any).
	API *web.Server
	// Store is the store NewServer made; the API serves it unless the
	// Config named another.
	Store *redisstore.Store
	// Clock is the clock of Store and, unless the Config named another, of
	// the API; it stands at T0 until moved.
	Clock *clock.Simulated
	// Logs holds the API's logs, JSON lines from the debug level on, unless
	// the Config named a Logger.
	Logs *nodetest.LogBuffer

	t testing.TB
}

// Option adjusts what NewServer makes.
type Option func(*options)

type options struct {
	store   func(*redisstore.Config)
	handler func(http.Handler) http.Handler
}

// WithStore adjusts the configuration of the Store (its Prefix and Now are
// set before).
func WithStore(f func(*redisstore.Config)) Option { return func(o *options) { o.store = f } }

// WithHandler serves wrap(API) instead of the API, to inject failures,
// say.
func WithHandler(wrap func(api http.Handler) http.Handler) Option {
	return func(o *options) { o.handler = wrap }
}

// NewServer starts the API for t and closes it when t ends. cfg (nil for
// the defaults) is the API's configuration; its zero Store, Now and Logger
// are filled with the Server's Store, Clock and Logs.
func NewServer(t testing.TB, cfg *web.Config, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{Clock: clock.NewSimulated(T0), Logs: &nodetest.LogBuffer{}, t: t}
	db := redistest.New(t)
	scfg := &redisstore.Config{Prefix: db.Prefix, Now: s.Clock.Now}
	if o.store != nil {
		o.store(scfg)
	}
	var err error
	s.Store, err = redisstore.New(db.Client, scfg)
	require.NoError(t, err)

	c := web.Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Store == nil {
		c.Store = s.Store
	}
	if c.Now == nil {
		c.Now = s.Clock.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewJSONHandler(s.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s.API, err = web.New(&c)
	require.NoError(t, err)
	var h http.Handler = s.API
	if o.handler != nil {
		h = o.handler(s.API)
	}
	s.Server = httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// Register registers the queue in the Store.
func (s *Server) Register(name string, shards int) {
	s.t.Helper()
	require.NoError(s.t, s.Store.RegisterQueue(context.Background(), persistence.QueueSpec{Name: name, Shards: shards}))
}
