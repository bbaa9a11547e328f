// Package server runs an Orderly node process from its configuration: the
// store (Redis, or the embedded in-memory store), the workers of the
// configured queues (log, noop or http webhook handlers), the node, the HTTP
// API, and the signals. cmd/node is a thin main around Run.
//
// Signals: SIGTERM and SIGINT stop gracefully (batches finish within
// shutdown_timeout, leases are released, exit 0); a second one cancels the
// running batches at once. SIGTSTP makes the node quiet (it finishes its
// batches, releases its shards and keeps running); SIGCONT resumes it.
package server

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cmd/internal/chaos"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/internal/embedded"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/ui"
)

// httpShutdownTimeout bounds the HTTP server's graceful shutdown, after the
// node stopped.
const httpShutdownTimeout = 5 * time.Second

// Run runs a node until ctx ends or a stop signal arrives on signals, and
// returns nil after a clean stop. Logs go to logOut.
func Run(ctx context.Context, cfg *config.Config, logOut io.Writer, signals <-chan os.Signal) error {
	log := NewLogger(cfg.Node.LogLevel, cfg.Node.LogFormat, logOut)
	redis.SetLogger(logbridge.GoRedis(log)) // go-redis logs through a process-wide logger
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	log.Info("configuration", "file", cfg.File, "config", fmt.Sprintf("%+v", cfg.Redacted().Node), "queues", len(cfg.Queues))
	if err := checkExposure(cfg, log); err != nil {
		return err
	}

	rdb, closeStore, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeStore()

	rs, err := redisstore.New(rdb, &redisstore.Config{
		Prefix: cfg.Node.RedisPrefix, Logger: log, MaxPayloadBytes: cfg.Node.MaxPayloadBytes,
		Durability: cfg.Node.Durability, DurabilityReplicas: cfg.Node.DurabilityReplicas, DurabilityTimeout: cfg.Node.DurabilityTimeout,
	})
	if err != nil {
		return err
	}
	m := metrics.New()
	rdb.AddHook(m.RedisHook()) // before any concurrent use of rdb
	names := make([]string, len(cfg.Queues))
	for i, q := range cfg.Queues {
		names[i] = q.Name
	}
	m.InitQueues(names...)
	var writes *writeWatch
	store := m.Store(chaos.WrapStore(rs, log)) // counts enqueues and settlements
	if cfg.Node.Redis != "" {                  // the embedded store never refuses writes
		writes = newWriteWatch(rdb, cfg.Node.RedisPrefix)
		store = writes.Store(store)
		m.Registry().MustRegister(writes.Gauge())
	}
	workers, closeWebhooks, err := buildWorkers(cfg.Queues, log, m.WebhookAnswered)
	if err != nil {
		return err
	}
	defer closeWebhooks() // runs after the node's stop below: no call is left
	tlsConfig, err := httpTLS(cfg.Node)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Node.HTTP)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", cfg.Node.HTTP, err)
	}
	defer ln.Close()
	clusterCfg, err := clusterConfig(cfg, ln.Addr().String(), log)
	if err != nil {
		return err
	}
	if clusterCfg != nil {
		clusterCfg.StoreID = rs.StoreID // the store passed to the node is wrapped (metrics, write watch)
	}
	stopChaos, err := chaos.Install(clusterCfg, log)
	if err != nil {
		return err
	}
	defer stopChaos()
	var actorTLS *tls.Config
	if cfg.Node.ActorTLSCert != "" {
		if actorTLS, err = orderly.LoadActorTLS(cfg.Node.ActorTLSCert, cfg.Node.ActorTLSKey, cfg.Node.ActorTLSCA); err != nil {
			return err
		}
	}
	node, err := orderly.NewNode(store, &orderly.Config{
		Cluster:         clusterCfg,
		ActorTLS:        actorTLS,
		ActorAddr:       cfg.Node.ActorAddr,
		ActorAdvertise:  cfg.Node.ActorAdvertiseAddr,
		ActorToken:      cfg.Node.ActorToken,
		Name:            cfg.Node.Name,
		Workers:         workers,
		Periodic:        periodicJobs(cfg.Periodic),
		Concurrency:     cfg.Node.Concurrency,
		Scheduler:       orderly.Scheduler(cfg.Node.Scheduler),
		LeaseTTL:        cfg.Node.LeaseTTL,
		ShutdownTimeout: cfg.Node.ShutdownTimeout,
		HandoffTimeout:  cfg.Node.HandoffTimeout,
		MorgueTTL:       cfg.Node.MorgueTTL,
		Logger:          log,
		Observer:        m,
		Middleware:      []orderly.Middleware{m.Middleware()},
	})
	if err != nil {
		return err
	}
	m.Watch(metricsSource(node, store, rs, log))

	if cfg.Node.HTTPToken == "" && !isLoopback(ln.Addr()) {
		if !cfg.Node.HTTPPublic {
			return fmt.Errorf("the HTTP API would listen on %s, reachable from other hosts, without a token: set --http-token (or listen on 127.0.0.1), or --http-public to allow it", ln.Addr())
		}
		log.Warn("the HTTP API listens on a non-loopback address without a token (http_public): anyone who reaches it can enqueue and change queues", "http", ln.Addr().String())
	}
	if cfg.Node.HTTPToken != "" && tlsConfig == nil && !isLoopback(ln.Addr()) {
		log.Warn("the HTTP API listens on a non-loopback address in plain HTTP: its bearer token travels unencrypted, readable by anyone on the path; serve HTTPS (--http-tls-cert, --http-tls-key) or put a TLS proxy in front", "http", ln.Addr().String())
	}
	maxConns, fileLimit := connectionLimit(cfg.Node.HTTPMaxConnections, openFileLimit())
	if maxConns < cfg.Node.HTTPMaxConnections {
		log.Warn("http_max_connections lowered to half the open-file limit, so that HTTP clients cannot take the descriptors Redis, gossip and webhooks need; raise the limit (ulimit -n) to allow more",
			"http_max_connections", maxConns, "configured", cfg.Node.HTTPMaxConnections, "open_file_limit", fileLimit)
	}
	ready := func(ctx context.Context) error {
		// A node that cannot reach Redis serves no shard, so the node
		// alone would count it ready (0 of 0 shards): with Sentinel and
		// no master reachable it must not be (docs/contract.md §4).
		if err := store.Ping(ctx); err != nil {
			return fmt.Errorf("%w: store unreachable: %v", orderly.ErrNotReady, err)
		}
		if writes != nil {
			if err := writes.Check(ctx); err != nil {
				return fmt.Errorf("%w: %v", orderly.ErrNotReady, err)
			}
		}
		return node.Ready(ctx)
	}
	api, err := web.New(&web.Config{
		Store: store, Ready: ready, Logger: log, Token: cfg.Node.HTTPToken,
		ReadToken:       cfg.Node.HTTPReadToken,
		EmbeddedStore:   cfg.Node.Redis == "",
		StateQueues:     stateQueues(cfg.Queues),
		MaxPayloadBytes: cfg.Node.MaxPayloadBytes,
		AllowedHosts:    allowedHosts(cfg.Node),
		MaxConnections:  maxConns,
		TLS:             tlsConfig,
		Metrics:         m.Handler(),
		UI:              ui.Handler(),
		Periodic: func(ctx context.Context) ([]apiv1.Periodic, error) {
			jobs, err := node.Periodic(ctx)
			if err != nil {
				return nil, err
			}
			out := make([]apiv1.Periodic, len(jobs))
			for i, j := range jobs {
				out[i] = apiv1.Periodic{Name: j.Name, Queue: j.Queue, Schedule: j.Schedule, ID: j.ID,
					LastTick: unixOrNil(j.Last), NextTick: unixOrNil(j.Next)}
			}
			return out, nil
		},
		SetPaused: func(ctx context.Context, queue string, paused bool) error {
			if paused {
				return node.PauseQueue(ctx, queue)
			}
			return node.ResumeQueue(ctx, queue)
		},
		Members: func(context.Context) (string, []apiv1.Member) {
			var out []apiv1.Member
			for _, m := range node.Members() {
				out = append(out, apiv1.Member{Name: m.Name, State: string(m.State), HTTP: m.HTTP, Actor: m.Actor, Queues: m.Queues, Version: m.Version})
			}
			return node.Name(), out
		},
	})
	if err != nil {
		return err
	}

	if err := node.Start(ctx); err != nil {
		return err
	}
	httpErr := make(chan error, 1)
	go func() { httpErr <- api.Serve(ln) }()
	scheme := "http://"
	if tlsConfig != nil {
		scheme = "https://"
	}
	log.Info("HTTP API listening", "http", scheme+ln.Addr().String(), "max_connections", maxConns)

	fatal := make(chan error, 1)
	checkCtx, stopCheck := context.WithCancel(ctx)
	checkDone := make(chan struct{})
	// The check uses the Redis client, which a deferred call closes: stop
	// the check and wait for it first (deferred calls run last first).
	defer func() { stopCheck(); <-checkDone }()
	if cfg.Node.Redis != "" {
		go func() {
			defer close(checkDone)
			checkServer(checkCtx, rdb, cfg.Node.AllowEviction, log, fatal)
		}()
	} else {
		close(checkDone)
	}

	runErr := wait(ctx, node, signals, httpErr, fatal, log)

	// Stop the node first (the HTTP API keeps answering, /readyz says not
	// ready), then the HTTP server.
	stopErr := stopNode(node, signals, log)
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := api.Shutdown(sctx); err != nil {
		api.Close()
	}
	if runErr != nil {
		return runErr
	}
	return stopErr
}

// wait blocks until the node must stop: ctx ends, a stop signal arrives, the
// HTTP server fails, or the server check failed. Quiet and resume signals
// are handled on the way.
func wait(ctx context.Context, node *orderly.Node, signals <-chan os.Signal, httpErr, fatal <-chan error, log *slog.Logger) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-httpErr:
			return fmt.Errorf("HTTP server: %w", err)
		case err := <-fatal:
			return err
		case sig := <-signals:
			switch sig {
			case syscall.SIGTSTP:
				if err := node.Quiet(ctx); err != nil {
					log.Warn("cannot quiet the node", "err", err)
				}
			case syscall.SIGCONT:
				if err := node.Resume(ctx); err != nil {
					log.Warn("cannot resume the node", "err", err)
				}
			default:
				log.Info("stopping on signal; send it again to cancel running batches", "signal", sig.String())
				return nil
			}
		}
	}
}

// stopNode stops the node gracefully (running batches finish within
// shutdown_timeout); a further stop signal cuts the stop short: running
// batches are cancelled at once and go back to the queue. It returns once
// the node has stopped.
func stopNode(node *orderly.Node, signals <-chan os.Signal, log *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- node.Stop(context.Background()) }()
	for {
		select {
		case err := <-done:
			return err
		case sig := <-signals:
			if sig == syscall.SIGINT || sig == syscall.SIGTERM {
				log.Warn("second stop signal: cancelling running batches", "signal", sig.String())
				if err := node.StopAndCancel(context.Background()); err != nil {
					log.Warn("node stopped with an error", "err", err)
				}
				return <-done // the same stop's outcome, now complete
			}
		}
	}
}

// openStore returns the Redis client of the store and a function that closes
// it (and the embedded store, if any).
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if cfg.Node.Redis == "" {
		if cfg.Node.Durability == config.DurabilityReplicated {
			return nil, nil, errors.New("durability replicated needs a Redis with replicas (--redis); the embedded store has none")
		}
		srv, err := embedded.Start()
		if err != nil {
			return nil, nil, err
		}
		log.Warn("USING THE EMBEDDED IN-MEMORY STORE: nothing survives a restart of this process, and no other node can join. Set --redis (or ORDERLY_REDIS) to a Redis URL for anything but a trial.")
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		return rdb, func() { rdb.Close(); srv.Close() }, nil
	}
	u, err := redisurl.Parse(cfg.Node.Redis)
	if err != nil {
		return nil, nil, fmt.Errorf("redis URL: %w", err)
	}
	rdb := u.NewClient()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	info, err := redisstore.CheckServer(cctx, rdb, cfg.Node.AllowEviction)
	switch {
	case errors.Is(err, redisstore.ErrServerTooOld), errors.Is(err, redisstore.ErrEvictionPolicy):
		rdb.Close()
		return nil, nil, refusal(err)
	case err != nil:
		log.Warn("Redis is not reachable yet; the node starts and serves once it is", "url", u.Redacted(), "err", err)
	default:
		for _, w := range info.Warnings {
			log.Warn("Redis: " + w)
		}
		log.Info("Redis", "url", u.Redacted(), "kind", u.Kind.String(), "version", info.Version, "aof", info.AOF, "rdb_snapshots", info.RDBSaves)
	}
	return rdb, func() { rdb.Close() }, nil
}

// checkServer checks the server once it is reachable, if it was not at
// start; a server that cannot hold Orderly's data stops the node.
func checkServer(ctx context.Context, rdb redis.UniversalClient, allowEviction bool, log *slog.Logger, fatal chan<- error) {
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		info, err := redisstore.CheckServer(cctx, rdb, allowEviction)
		cancel()
		switch {
		case errors.Is(err, redisstore.ErrServerTooOld), errors.Is(err, redisstore.ErrEvictionPolicy):
			fatal <- refusal(err)
			return
		case err == nil:
			for _, w := range info.Warnings {
				log.Debug("Redis: " + w)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// refusal explains a Redis the node refuses to run on, naming the setting
// that accepts one that may evict keys.
func refusal(err error) error {
	if errors.Is(err, redisstore.ErrEvictionPolicy) {
		return fmt.Errorf("%w: set --allow-eviction (ORDERLY_ALLOW_EVICTION=true, or allow_eviction: true under node in the config file) to run on it anyway, at the risk of losing jobs that Redis evicts", err)
	}
	return err
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// httpTLS loads the HTTP API's certificate, if one is configured.
func httpTLS(n config.NodeConfig) (*tls.Config, error) {
	if n.HTTPTLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(n.HTTPTLSCert, n.HTTPTLSKey)
	if err != nil {
		return nil, fmt.Errorf("http_tls_cert %s, http_tls_key %s: %w", n.HTTPTLSCert, n.HTTPTLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// allowedHosts returns the names a request may give as Host without a
// token: the configured ones, and the host of the HTTP listen address when
// it is a name (an address is accepted anyway when requests arrive on it).
func allowedHosts(n config.NodeConfig) []string {
	hosts := slices.Clone(n.HTTPAllowedHosts)
	if host, _, err := net.SplitHostPort(n.HTTP); err == nil && host != "" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	return hosts
}

// connectionLimit returns the HTTP connection limit: the configured one,
// or half the process's open-file limit (fileLimit; 0 when unknown) if that
// is smaller, so that HTTP clients cannot take the descriptors Redis,
// gossip and webhooks need.
func connectionLimit(configured int, fileLimit uint64) (int, uint64) {
	if fileLimit > 0 && uint64(configured) > fileLimit/2 {
		return max(int(fileLimit/2), 1), fileLimit
	}
	return configured, fileLimit
}

// metricsSource tells the metrics where to read the scrape-time gauges.
func metricsSource(node *orderly.Node, store persistence.Store, rs *redisstore.Store, log *slog.Logger) metrics.Source {
	return metrics.Source{
		Store:  store,
		Queues: node.Queues,
		Shards: func(ctx context.Context) (map[string]int, error) {
			st, err := node.Status(ctx)
			if err != nil {
				return nil, err
			}
			out := map[string]int{}
			for _, q := range node.Queues() {
				out[q] = 0
			}
			for _, r := range st.Shards {
				if r.Serving {
					out[r.Ref.Queue]++
				}
			}
			return out, nil
		},
		Members: func() map[string]int {
			out := map[string]int{}
			for _, m := range node.Members() {
				out[string(m.State)]++
			}
			return out
		},
		RoundTrips: func() (int64, int64) {
			c := rs.Counters()
			return c.RoundTrips, c.Commands
		},
		Logger: log,
	}
}

// clusterConfig returns the gossip configuration: on whenever the node uses
// Redis (nodes sharing a Redis form a cluster); off on the embedded store,
// which no other node can share.
func clusterConfig(cfg *config.Config, httpAddr string, log *slog.Logger) (*orderly.ClusterConfig, error) {
	if cfg.Node.Redis == "" {
		return nil, nil
	}
	c := &orderly.ClusterConfig{
		Bind:  cfg.Node.Bind,
		Join:  cfg.Node.Join,
		Label: cfg.Node.ClusterLabel,
		HTTP:  httpAddr,
	}
	if cfg.Node.GossipKey != "" {
		key, err := base64.StdEncoding.DecodeString(cfg.Node.GossipKey)
		if err != nil {
			return nil, fmt.Errorf("gossip_key: not base64")
		}
		c.SecretKey = key
	}
	return c, nil
}

// NewLogger returns the node's logger: text or JSON on out, at level.
func NewLogger(level, format string, out io.Writer) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}

// unixOrNil is t in unix seconds, or nil for the zero time.
func unixOrNil(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	v := persistence.UnixSeconds(t)
	return &v
}

// periodicJobs are the node's periodic jobs of the configuration.
func periodicJobs(ps []config.PeriodicConfig) []orderly.PeriodicJob {
	out := make([]orderly.PeriodicJob, len(ps))
	for i, p := range ps {
		out[i] = orderly.PeriodicJob{Name: p.Name, Queue: p.Queue, Schedule: p.Schedule, ID: p.ID, Payload: p.Payload}
	}
	return out
}
