package orderly

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/remoteguard"
)

// Defaults of Config.
const (
	DefaultConcurrency     = 5
	DefaultScheduler       = SchedulerLag
	DefaultLeaseTTL        = 3 * time.Second
	DefaultShutdownTimeout = 25 * time.Second
	DefaultHandoffTimeout  = 30 * time.Second
	DefaultMorgueTTL       = 180 * 24 * time.Hour
	DefaultIdlePoll        = 5 * time.Second
	// MaxWeight is the largest Worker.Weight.
	MaxWeight = 1000
	// MinLeaseTTL is the shortest LeaseTTL accepted: renewals go out every
	// third of it and must reach Redis well within that.
	MinLeaseTTL = 300 * time.Millisecond
)

// Scheduler names how a node hands its concurrency (Config.Concurrency) to
// the shards that have work.
type Scheduler string

// Schedulers.
const (
	// SchedulerLag serves the shard whose oldest due job has waited
	// longest (Lowkiq's default).
	SchedulerLag Scheduler = "lag"
	// SchedulerSeq serves the shards with work in turn (round robin).
	SchedulerSeq Scheduler = "seq"
	// SchedulerWeighted shares the node's concurrency between queues in
	// proportion to their weights (Worker.Weight) while their shards wait
	// for it: a queue of weight 3 starts three handler calls for each
	// call of a queue of weight 1 (asynq's and Sidekiq's weighted
	// queues). Within a queue, the oldest work first. A queue that went
	// idle does not catch up on the share it did not use.
	SchedulerWeighted Scheduler = "weighted"
	// SchedulerStrict serves the queues of the highest weight first: a
	// shard of a lower-weight queue starts a call only while no shard of
	// a higher one waits (asynq's strict priority). Within a weight, the
	// oldest work first. A busy high-weight queue starves the others.
	SchedulerStrict Scheduler = "strict"
)

// Clock is a node's time source. Leases (renewals and the lease guard),
// drain and stop deadlines, wake-up timers, retry times, morgue retention
// and the cluster's health checks all read it. Implementations are safe for
// concurrent use. It has two methods:
//
//	// Now returns the current time.
//	Now() time.Time
//	// AfterFunc calls f in its own goroutine once d has passed on the
//	// clock. Calling stop cancels the call and reports whether it was
//	// still pending (as context.AfterFunc's stop does).
//	AfterFunc(d time.Duration, f func()) (stop func() bool)
//
// The default is the system clock. A test may set a clock it moves by hand,
// together with the same clock on the store (redisstore.Config.Now): time
// written to Redis and time measured by the node then agree. Redis still
// expires leases in real time, so a clock that runs slower than real time
// makes a node lose its leases.
type Clock = clock.Clock

// Config configures a Node. The zero value of each field means its default.
type Config struct {
	// Name identifies the node in leases, logs and the cluster [hostname].
	Name string
	// Workers are the queues this node serves. At least one.
	Workers []Worker
	// Periodic are jobs the node enqueues on a schedule, into its own
	// queues (docs/contract.md §9). Every node of a cluster may be given
	// the same list: each tick is enqueued once cluster-wide.
	Periodic []PeriodicJob
	// Concurrency is how many batches run at once on the node
	// [DefaultConcurrency]: how many shards run a fetched window, whose
	// calls may overlap (Worker.ConcurrentCalls).
	Concurrency int
	// Scheduler hands the concurrency to shards with work
	// [DefaultScheduler].
	Scheduler Scheduler
	// LeaseTTL is how long a shard lease lives without renewal
	// [DefaultLeaseTTL], at least MinLeaseTTL; it is renewed every third of
	// it. After a crash, another node takes the shard over once it expires.
	LeaseTTL time.Duration
	// ShutdownTimeout bounds a graceful Stop when its context has no
	// earlier deadline [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// HandoffTimeout bounds the drain of a shard that moves to another
	// node, and of the shards of a node going quiet [DefaultHandoffTimeout].
	HandoffTimeout time.Duration
	// MorgueTTL is how long morgue entries are kept [DefaultMorgueTTL]; an
	// entry is deleted within a minute of its expiry (a tenth of a shorter
	// TTL, at least a second).
	MorgueTTL time.Duration
	// IdlePoll is how often the node checks its idle shards for work they
	// were not told about (enqueue notices are hints) [DefaultIdlePoll]:
	// all of them in one round trip (Store.PollShards, one per server of a
	// Redis Cluster), waking only those with work.
	IdlePoll time.Duration
	// Middleware wraps every worker's handler; the first is the outermost.
	// For the calls of a pull queue's concurrent window (package pull), the
	// handler hands the batch to the pull broker and returns at once: a
	// middleware wraps that hand-over, not the wait for the worker's
	// answer, and sees the broker's internal "held" error
	// (otelorderly.ServerMiddleware ends its span when the call ends). The
	// Observer still hears of each call when its answer came, with its
	// whole duration.
	Middleware []Middleware
	// Logger receives the node's logs, protoactor's and memberlist's
	// included [slog.Default()].
	Logger *slog.Logger
	// Clock is the node's time source [the system clock].
	Clock Clock
	// Cluster, when set, makes the node a member of a cluster: it gossips
	// with the others and serves its share of the shards. Nil serves every
	// shard of the node's queues.
	Cluster *ClusterConfig
	// ActorAddr, when set (host:port; port 0 picks one), serves the node's
	// enqueue actor through protoactor remote, so that other processes can
	// send it messages (see messages.EnqueueActorName). Only orderly's messages to
	// the enqueue actor are accepted from other processes: system messages
	// (Stop, PoisonPill, Watch...) and messages to other actors are dropped.
	// A wildcard host (0.0.0.0, [::]) needs ActorAdvertise.
	ActorAddr string
	// ActorAdvertise is the address other processes reach the actor remote
	// at, host:port, when it differs from ActorAddr; required when
	// ActorAddr binds every interface. It is the address the node
	// advertises (Member.Actor) and the one its actors' PIDs carry.
	ActorAdvertise string
	// ActorToken, when set, is required from every process that connects
	// to the actor remote, in gRPC metadata (ActorCredentials is the
	// client side); a connection without it is refused.
	ActorToken string
	// ActorTLS, when set, serves the actor remote over TLS with it and
	// dials other processes' remotes with it too (the answer to a request
	// dials the sender back). For mutual TLS, set ClientAuth to
	// tls.RequireAndVerifyClientCert with ClientCAs, and RootCAs, as
	// LoadActorTLS does: a process without a certificate the CAs signed
	// then cannot connect at all. It may be combined with ActorToken.
	ActorTLS *tls.Config
	// Observer, if set, receives every shard's batch and lease events
	// (metrics.Metrics is one).
	Observer Observer
}

// ClusterConfig configures a node's membership in a cluster: nodes gossip
// (hashicorp/memberlist, from its LAN profile with failure detection tuned
// to about 1 s) and share the shards of the queues they serve. The zero
// value of each field means its default.
type ClusterConfig struct {
	// Bind is the gossip address (UDP and TCP), host:port
	// [127.0.0.1:7946]; port 0 picks a free one.
	Bind string
	// Advertise is the address others reach this node at, when it differs
	// from Bind (NAT, containers).
	Advertise string
	// Join are seeds of other members: host:port addresses, where a host
	// that is a DNS name stands for every address it resolves to (a
	// Kubernetes headless Service), or "dns+srv:" and a DNS name of SRV
	// records (each target and port). Names are looked up again while the
	// node runs, and addresses that are not members yet are joined: within
	// 2 s while the node sees no other member, every RejoinInterval once it
	// does. A seed that does not answer is retried; the first node of a
	// cluster needs none.
	Join []string
	// RejoinInterval is how often a node that has peers looks its seeds up
	// again and re-joins the addresses it does not see, which heals
	// partitions [10 s].
	RejoinInterval time.Duration
	// ProbeInterval, ProbeTimeout and SuspicionMult tune failure detection
	// [200 ms, 100 ms, 2: a crashed member is noticed in about 1 s].
	ProbeInterval, ProbeTimeout time.Duration
	SuspicionMult               int
	// SecretKey (16, 24 or 32 bytes) encrypts gossip with AES; nil sends it
	// in the clear. All members must share it.
	SecretKey []byte
	// Label is put on every gossip packet; members with another label are
	// ignored, so that two clusters on one network never merge.
	Label string
	// HTTP is the address of the node's HTTP API, advertised to the others
	// (shown by `orderly members`).
	HTTP string
	// transport replaces memberlist's network transport: tests inject
	// faults through it (export_test.go).
	transport memberlist.Transport
	// resolver looks the seeds' names up instead of DNS: the test build
	// of the binary injects one (internal/hooks.ClusterResolver).
	resolver cluster.Resolver
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "orderly"
		}
		c.Name = h
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Scheduler == "" {
		c.Scheduler = DefaultScheduler
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = DefaultHandoffTimeout
	}
	if c.MorgueTTL == 0 {
		c.MorgueTTL = DefaultMorgueTTL
	}
	if c.IdlePoll == 0 {
		c.IdlePoll = DefaultIdlePoll
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate checks a config with its defaults applied; errors name the
// field.
func (c *Config) validate() error {
	switch {
	case len(c.Workers) == 0:
		return errors.New("orderly: at least one worker is required")
	case c.Concurrency < 1:
		return fmt.Errorf("orderly: Concurrency must be at least 1, got %d", c.Concurrency)
	case c.Scheduler != SchedulerLag && c.Scheduler != SchedulerSeq && c.Scheduler != SchedulerWeighted && c.Scheduler != SchedulerStrict:
		return fmt.Errorf("orderly: Scheduler %q is not %q, %q, %q or %q", c.Scheduler, SchedulerLag, SchedulerSeq, SchedulerWeighted, SchedulerStrict)
	case c.LeaseTTL < MinLeaseTTL:
		return fmt.Errorf("orderly: LeaseTTL must be at least %s, got %s", MinLeaseTTL, c.LeaseTTL)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("orderly: ShutdownTimeout must not be negative, got %s", c.ShutdownTimeout)
	case c.HandoffTimeout < 0:
		return fmt.Errorf("orderly: HandoffTimeout must not be negative, got %s", c.HandoffTimeout)
	case c.MorgueTTL < 0:
		return fmt.Errorf("orderly: MorgueTTL must not be negative, got %s", c.MorgueTTL)
	case c.IdlePoll < 0:
		return fmt.Errorf("orderly: IdlePoll must not be negative, got %s", c.IdlePoll)
	}
	if c.ActorAddr != "" {
		host, _, err := net.SplitHostPort(c.ActorAddr)
		if err != nil {
			return fmt.Errorf("orderly: ActorAddr %q: %w", c.ActorAddr, err)
		}
		if remoteguard.IsWildcard(host) && c.ActorAdvertise == "" {
			return fmt.Errorf("orderly: ActorAddr %s binds every interface: set ActorAdvertise to the address other hosts reach it at", c.ActorAddr)
		}
	}
	if c.ActorTLS != nil && c.ActorAddr == "" {
		return errors.New("orderly: ActorTLS is set without ActorAddr")
	}
	if c.Scheduler != SchedulerWeighted && c.Scheduler != SchedulerStrict {
		for _, w := range c.Workers {
			if w.Weight != 0 {
				return fmt.Errorf("orderly: worker %s has a Weight, which only the %q and %q schedulers use; the Scheduler is %q", w.Queue, SchedulerWeighted, SchedulerStrict, c.Scheduler)
			}
		}
	}
	if c.ActorAdvertise != "" {
		if c.ActorAddr == "" {
			return errors.New("orderly: ActorAdvertise is set without ActorAddr")
		}
		host, port, err := net.SplitHostPort(c.ActorAdvertise)
		if err != nil || port == "0" || remoteguard.IsWildcard(host) {
			return fmt.Errorf("orderly: ActorAdvertise %q is not a concrete host:port", c.ActorAdvertise)
		}
	}
	return nil
}
