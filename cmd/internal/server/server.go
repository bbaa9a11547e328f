// Package server runs an Orderly node process from its configuration: the
// store (Redis, or the embedded in-memory store), the workers of the
// configured queues (log, noop or http webhook handlers), the node, the HTTP
// API, and the signals. cmd/internal/app calls Run to run a node.
//
// Signals: SIGTERM and SIGINT stop gracefully (batches finish within
// shutdown_timeout, leases are released, exit 0); a second one cancels the
// running batches at once. SIGTSTP makes the node quiet (it finishes its
// batches, releases its shards and keeps running); SIGCONT resumes it.
// SIGUSR1 writes a debug dump to the log (the shards' states and every
// goroutine's stack) and the node keeps running (debug.go).
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
	"github.com/orderlyhq/orderly/internal/embeddedredis"
	"github.com/orderlyhq/orderly/internal/logbridge"
	"github.com/orderlyhq/orderly/internal/queuehistory"
	"github.com/orderlyhq/orderly/metrics"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/web/ui"
)

// httpShutdownTimeout bounds the HTTP server's graceful shutdown, after the
// node stopped.
const httpShutdownTimeout = 5 * time.Second

// Run runs a node until ctx ends or a stop signal arrives on signals, and
// returns nil after a clean stop. Logs go to logOut.
//
// The steps, in order: open the store and wrap it (metrics, write watch),
// build the workers, listen for HTTP, join the cluster's configuration,
// build the node and its HTTP API, then serve until a stop and stop the
// node before the HTTP server.
func Run(ctx context.Context, cfg *config.Config, logOut io.Writer, signals <-chan os.Signal) error {
	log := startLog(cfg, logOut)
	if err := checkExposure(cfg, log); err != nil {
		return err
	}
	rdb, closeStore, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeStore()
	p := &process{cfg: cfg, log: log, rdb: rdb}
	p.dump = &dumper{p: p, out: logOut}
	if err := p.wrapStore(); err != nil {
		return err
	}
	defer p.rs.Close() // the feed watchers, before the client they use
	p.pull = pull.New(&pull.Config{Logger: log})
	p.metrics.WatchPull(p.pull.Stats)
	workers, closeWebhooks, err := buildWorkers(cfg.Queues, log, p.metrics.WebhookAnswered, p.pull)
	if err != nil {
		return err
	}
	defer closeWebhooks() // runs after serve's stop of the node: no call is left
	if err := p.listen(); err != nil {
		return err
	}
	defer p.ln.Close()
	stopDebug, err := p.serveDebug()
	if err != nil {
		return err
	}
	defer stopDebug()
	clusterCfg, err := clusterConfig(cfg, p.ln.Addr().String(), log)
	if err != nil {
		return err
	}
	stopChaos, err := chaos.Install(clusterCfg, log)
	if err != nil {
		return err
	}
	defer stopChaos()
	if err := p.newNode(clusterCfg, workers); err != nil {
		return err
	}
	if err := p.newAPI(); err != nil {
		return err
	}
	return p.serve(ctx, signals)
}

// startLog returns the node's logger, routes go-redis's logs into it, and
// logs the configuration and its warnings.
func startLog(cfg *config.Config, logOut io.Writer) *slog.Logger {
	log := NewLogger(cfg.Node.LogLevel, cfg.Node.LogFormat, logOut)
	redis.SetLogger(logbridge.GoRedis(log)) // go-redis logs through a process-wide logger
	for _, w := range cfg.Warnings {
		log.Warn("configuration: " + w)
	}
	log.Info("configuration", "file", cfg.File, "config", fmt.Sprintf("%+v", cfg.Redacted().Node), "queues", len(cfg.Queues))
	return log
}

// process is a node process as Run builds it, step by step.
type process struct {
	cfg *config.Config
	log *slog.Logger
	rdb redis.UniversalClient
	// pull hands the batches of the pull queues to pull workers; stopped
	// before the node, so that waiting pulls end and unpulled batches go
	// back.
	pull *pull.Broker
	// rs is the Redis store; store is rs as the node and the HTTP API use
	// it, wrapped for metrics, chaos and (on Redis) the write watch.
	rs      *redisstore.Store
	store   persistence.Store
	writes  *writeWatch // nil on the embedded store, which never refuses writes
	metrics *metrics.Metrics
	// ln is the HTTP listener, served with tls when it is not nil, by at
	// most maxConns connections at once.
	ln       net.Listener
	tls      *tls.Config
	maxConns int
	node     *orderly.Node
	api      *web.Server
	// history records the queues' metrics once a minute for the charts.
	history *queuehistory.Recorder
	dump    *dumper // the debug dump of SIGUSR1
}

// wrapStore builds the store on the Redis client and wraps it: metrics
// count enqueues and settlements, and on Redis the write watch refuses
// writes Redis would not keep.
func (p *process) wrapStore() error {
	n := p.cfg.Node
	rs, err := redisstore.New(p.rdb, &redisstore.Config{
		Prefix: n.RedisPrefix, Logger: p.log, MaxPayloadBytes: n.MaxPayloadBytes,
		Durability: n.Durability, DurabilityReplicas: n.DurabilityReplicas, DurabilityTimeout: n.DurabilityTimeout,
	})
	if err != nil {
		return err
	}
	m := metrics.New()
	p.rdb.AddHook(m.RedisHook()) // before any concurrent use of rdb
	names := make([]string, len(p.cfg.Queues))
	for i, q := range p.cfg.Queues {
		names[i] = q.Name
	}
	m.InitQueues(names...)
	store := m.Store(chaos.WrapStore(rs, p.log)) // counts enqueues and settlements
	if n.Redis != "" {                           // the embedded store never refuses writes
		p.writes = newWriteWatch(p.rdb, n.RedisPrefix)
		store = p.writes.Store(store)
		m.Registry().MustRegister(p.writes.Gauge())
	}
	p.rs, p.store, p.metrics = rs, store, m
	return nil
}

// listen loads the HTTP API's certificate, if any, and listens for HTTP.
func (p *process) listen() error {
	tlsConfig, err := httpTLS(p.cfg.Node)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", p.cfg.Node.HTTP)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", p.cfg.Node.HTTP, err)
	}
	p.ln, p.tls = ln, tlsConfig
	return nil
}

// newNode builds the node (not started) on the wrapped store, and points
// the metrics' scrape-time gauges at it.
func (p *process) newNode(clusterCfg *orderly.ClusterConfig, workers []orderly.Worker) error {
	n := p.cfg.Node
	var actorTLS *tls.Config
	if n.ActorTLSCert != "" {
		var err error
		if actorTLS, err = orderly.LoadActorTLS(n.ActorTLSCert, n.ActorTLSKey, n.ActorTLSCA); err != nil {
			return err
		}
	}
	periodic, err := periodicJobs(p.cfg.Periodic)
	if err != nil {
		return err
	}
	node, err := orderly.NewNode(p.store, &orderly.Config{
		Cluster:         clusterCfg,
		ActorTLS:        actorTLS,
		ActorAddr:       n.ActorAddr,
		ActorAdvertise:  n.ActorAdvertiseAddr,
		ActorToken:      n.ActorToken,
		Name:            n.Name,
		Workers:         workers,
		Periodic:        periodic,
		Concurrency:     n.Concurrency,
		Scheduler:       orderly.Scheduler(n.Scheduler),
		LeaseTTL:        n.LeaseTTL,
		ShutdownTimeout: n.ShutdownTimeout,
		HandoffTimeout:  n.HandoffTimeout,
		MorgueTTL:       n.MorgueTTL,
		Logger:          p.log,
		Observer:        p.metrics,
		Middleware:      []orderly.Middleware{p.metrics.Middleware()},
	})
	if err != nil {
		return err
	}
	p.node = node
	p.metrics.Watch(metricsSource(node, p.store, p.rs, p.log))
	return nil
}

// newAPI checks who can reach the HTTP API, bounds its connections, and
// builds it.
func (p *process) newAPI() error {
	n := p.cfg.Node
	if err := p.checkHTTPExposure(); err != nil {
		return err
	}
	maxConns, fileLimit := connectionLimit(n.HTTPMaxConnections, openFileLimit())
	if maxConns < n.HTTPMaxConnections {
		p.log.Warn("http_max_connections lowered to half the open-file limit, so that HTTP clients cannot take the descriptors Redis, gossip and webhooks need; raise the limit (ulimit -n) to allow more",
			"http_max_connections", maxConns, "configured", n.HTTPMaxConnections, "open_file_limit", fileLimit)
	}
	p.history = queuehistory.New(p.rdb, queuehistory.Config{Prefix: n.RedisPrefix, Logger: p.log})
	api, err := web.New(&web.Config{
		Store: p.store, Ready: p.ready, Logger: p.log, Token: n.HTTPToken,
		ReadToken:       n.HTTPReadToken,
		EmbeddedStore:   n.Redis == "",
		StateQueues:     stateQueues(p.cfg.Queues),
		QueueLimits:     queueLimits(p.cfg.Queues),
		History:         p.history,
		MaxPayloadBytes: n.MaxPayloadBytes,
		AllowedHosts:    allowedHosts(n),
		MaxConnections:  maxConns,
		MaxFeedWaits:    n.HTTPMaxFeedWaits,
		TLS:             p.tls,
		Metrics:         p.metrics.Handler(),
		UI:              ui.HandlerAt(n.HTTPBasePath),
		BasePath:        n.HTTPBasePath,
		Periodic:        p.periodic,
		SetPaused:       p.setPaused,
		Quiet:           p.setQuiet,
		IsQuiet:         p.isQuiet,
		Members:         p.members,
		Pull:            p.pull,
		WorkerTokens:    workerTokens(p.cfg.Queues),
	})
	if err != nil {
		return err
	}
	p.api, p.maxConns = api, maxConns
	return nil
}

// checkHTTPExposure refuses an HTTP API that other hosts reach without a
// token, unless http_public allows it, and warns of a token sent in plain
// HTTP to other hosts.
func (p *process) checkHTTPExposure() error {
	n, addr := p.cfg.Node, p.ln.Addr()
	if n.HTTPToken == "" && !isLoopback(addr) {
		if !n.HTTPPublic {
			return fmt.Errorf("the HTTP API would listen on %s, reachable from other hosts, without a token: set --http-token (or listen on 127.0.0.1), or --http-public to allow it", addr)
		}
		p.log.Warn("the HTTP API listens on a non-loopback address without a token (http_public): anyone who reaches it can enqueue and change queues", "http", addr.String())
	}
	if n.HTTPToken != "" && p.tls == nil && !isLoopback(addr) {
		p.log.Warn("the HTTP API listens on a non-loopback address in plain HTTP: its bearer token travels unencrypted, readable by anyone on the path; serve HTTPS (--http-tls-cert, --http-tls-key) or put a TLS proxy in front", "http", addr.String())
	}
	return nil
}

// ready is the HTTP API's readiness: the store answers, Redis keeps
// writes, and the node serves what it should.
func (p *process) ready(ctx context.Context) error {
	// A node that cannot reach Redis serves no shard, so the node alone
	// would count it ready (0 of 0 shards): with Sentinel and no master
	// reachable it must not be (docs/contract.md §4).
	if err := p.store.Ping(ctx); err != nil {
		return fmt.Errorf("%w: store unreachable: %v", orderly.ErrNotReady, err)
	}
	if p.writes != nil {
		if err := p.writes.Check(ctx); err != nil {
			return fmt.Errorf("%w: %v", orderly.ErrNotReady, err)
		}
	}
	return p.node.Ready(ctx)
}

// periodic lists the node's periodic jobs for the HTTP API.
func (p *process) periodic(ctx context.Context) ([]apiv1.Periodic, error) {
	jobs, err := p.node.Periodic(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]apiv1.Periodic, len(jobs))
	for i, j := range jobs {
		out[i] = apiv1.Periodic{Name: j.Name, Queue: j.Queue, Schedule: j.Schedule, ID: j.ID,
			LastTick: unixOrNil(j.Last), NextTick: unixOrNil(j.Next)}
	}
	return out, nil
}

// setPaused pauses or resumes a queue for the HTTP API.
func (p *process) setPaused(ctx context.Context, queue string, paused bool) error {
	if paused {
		return p.node.PauseQueue(ctx, queue)
	}
	return p.node.ResumeQueue(ctx, queue)
}

// setQuiet makes the node quiet or resumes it (POST /api/v1/node/quiet,
// /resume), as SIGTSTP and SIGCONT do.
func (p *process) setQuiet(ctx context.Context, quiet bool) error {
	if quiet {
		return p.node.Quiet(ctx)
	}
	return p.node.Resume(ctx)
}

// isQuiet reports whether the node is quiet.
func (p *process) isQuiet() bool { return p.node.IsQuiet() }

// members returns this node's name and the cluster's members as it sees
// them, for the HTTP API.
func (p *process) members(context.Context) (string, []apiv1.Member) {
	var out []apiv1.Member
	for _, m := range p.node.Members() {
		out = append(out, apiv1.Member{Name: m.Name, State: string(m.State), HTTP: m.HTTP, Actor: m.Actor, Queues: m.Queues, Version: m.Version})
	}
	return p.node.Name(), out
}

// serve starts the node and the HTTP API and, on Redis, checks the server
// once it is reachable if it was not at start; it waits for a reason to
// stop (wait), then stops the node first (the HTTP API keeps answering,
// /readyz says not ready), then the HTTP server.
func (p *process) serve(ctx context.Context, signals <-chan os.Signal) error {
	if err := p.node.Start(ctx); err != nil {
		return err
	}
	httpErr := make(chan error, 1)
	go func() { httpErr <- p.api.Serve(p.ln) }()
	scheme := "http://"
	if p.tls != nil {
		scheme = "https://"
	}
	p.log.Info("HTTP API listening", "http", scheme+p.ln.Addr().String()+p.cfg.Node.HTTPBasePath, "max_connections", p.maxConns)

	fatal := make(chan error, 1)
	// The check uses the Redis client, which Run closes once serve
	// returns: stop the check and wait for it first.
	stopCheck := p.checkServerLater(ctx, fatal)
	defer stopCheck()
	stopHistory := p.recordHistory(ctx)
	defer stopHistory()

	runErr := wait(ctx, p.node, signals, httpErr, fatal, p.dump.start, p.log)
	p.pull.Stop()
	stopErr := stopNode(p.node, signals, p.log)
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := p.api.Shutdown(sctx); err != nil {
		p.api.Close()
	}
	if runErr != nil {
		return runErr
	}
	return stopErr
}

// checkServerLater runs checkServer in a goroutine on Redis (the embedded
// store needs no check) and returns a function that stops it and waits for
// it.
func (p *process) checkServerLater(ctx context.Context, fatal chan<- error) (stop func()) {
	if p.cfg.Node.Redis == "" {
		return func() {}
	}
	checkCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkServer(checkCtx, p.rdb, p.cfg.Node.AllowEviction, p.log, fatal)
	}()
	return func() { cancel(); <-done }
}

// recordHistory records the queues' metrics once a minute (package
// queuehistory) until the returned function is called, which waits for the
// recording to stop: it uses the Redis client, which Run closes.
func (p *process) recordHistory(ctx context.Context) (stop func()) {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.history.Run(hctx, queuehistory.StoreStats(p.store))
	}()
	return func() { cancel(); <-done }
}

// wait blocks until the node must stop: ctx ends, a stop signal arrives, the
// HTTP server fails, or the server check failed. Quiet and resume signals
// are handled on the way, and SIGUSR1 starts a debug dump (dump).
func wait(ctx context.Context, node *orderly.Node, signals <-chan os.Signal, httpErr, fatal <-chan error, dump func(), log *slog.Logger) error {
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
			case syscall.SIGUSR1:
				dump()
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
		srv, err := embeddedredis.Start()
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
func periodicJobs(ps []config.PeriodicConfig) ([]orderly.PeriodicJob, error) {
	out := make([]orderly.PeriodicJob, len(ps))
	for i, p := range ps {
		sched, err := orderly.ParseCron(p.Schedule)
		if err != nil {
			return nil, fmt.Errorf("periodic job %s: %w", p.Name, err)
		}
		out[i] = orderly.PeriodicJob{Name: p.Name, Queue: p.Queue, Schedule: sched, ID: p.ID, Payload: p.Payload}
	}
	return out, nil
}
