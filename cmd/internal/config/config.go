package config

import (
	"errors"
	"net/url"
	"slices"
	"time"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/webhook"
)

// Errors.
var (
	// ErrInvalid is wrapped by every error Load and Validate return, except
	// flag.ErrHelp. The error's message lists each problem on its own line.
	ErrInvalid = errors.New("config: invalid configuration")
)

// Defaults of the node's settings.
const (
	// DefaultBind is the gossip listen address.
	DefaultBind = "127.0.0.1:7946"
	// DefaultHTTP is the HTTP API's listen address.
	DefaultHTTP = "127.0.0.1:8080"
	// DefaultHTTPMaxConnections is how many HTTP connections the node keeps
	// open at once (web.DefaultMaxConnections), lowered at start to half
	// the process's open-file limit when that is smaller.
	DefaultHTTPMaxConnections = 1024
	// DefaultHTTPMaxFeedWaits is how many change-feed long polls wait at
	// once on the node (web.DefaultMaxFeedWaits); one more is answered 429.
	DefaultHTTPMaxFeedWaits = 256
	// DefaultRedisPrefix prefixes every Redis key.
	DefaultRedisPrefix = redisstore.DefaultPrefix
	// DurabilityAsync and DurabilityReplicated are the durability modes.
	DurabilityAsync      = redisstore.DurabilityAsync
	DurabilityReplicated = redisstore.DurabilityReplicated
	// DefaultConcurrency is how many batches one node handles at once.
	DefaultConcurrency = orderly.DefaultConcurrency
	// DefaultScheduler picks the next shard to serve.
	DefaultScheduler = SchedulerLag
	// DefaultLeaseTTL is the lifetime of a shard lease.
	DefaultLeaseTTL = orderly.DefaultLeaseTTL
	// DefaultShutdownTimeout is how long a stopping node waits for its work.
	DefaultShutdownTimeout = orderly.DefaultShutdownTimeout
	// DefaultHandoffTimeout is how long a shard's handoff between nodes may
	// take.
	DefaultHandoffTimeout = orderly.DefaultHandoffTimeout
	// DefaultMorgueTTL is how long a dead payload stays in the morgue: 180
	// days.
	DefaultMorgueTTL = orderly.DefaultMorgueTTL
	// DefaultMaxPayloadBytes is the largest payload accepted.
	DefaultMaxPayloadBytes = persistence.DefaultMaxPayloadBytes
	// DefaultLogLevel is the least severe level logged.
	DefaultLogLevel = "info"
	// DefaultLogFormat is the log's format.
	DefaultLogFormat = "text"
)

// Defaults of a queue's settings.
const (
	// DefaultQueueName names the queue a node serves when no queue is
	// configured.
	DefaultQueueName = "default"
	// DefaultShards is a queue's number of shards.
	DefaultShards = orderly.DefaultShards
	// DefaultBatchSize is the most ids handed to one handler call.
	DefaultBatchSize = orderly.DefaultBatchSize
	// DefaultMaxRetryCount is how many failures a payload survives before
	// it goes to the morgue.
	DefaultMaxRetryCount = orderly.DefaultMaxRetryCount
	// NoRetries as a queue's MaxRetryCount (max_retry_count: -1 or none in
	// the file) sends a payload to the morgue at its first failure.
	NoRetries = orderly.NoRetries
	// DefaultRetryPolicy is a queue's backoff policy.
	DefaultRetryPolicy = RetryLowkiq
	// DefaultHandlerType is a queue's handler.
	DefaultHandlerType = HandlerLog
	// DefaultHTTPHandlerTimeout bounds one request of an http handler.
	DefaultHTTPHandlerTimeout = webhook.DefaultTimeout
	// LogPayloadBytes is how much of a payload the log handler prints, at
	// most, for each of the first three payloads of a job.
	LogPayloadBytes = 200
)

// MaxRetryZero is the error of max_retry_count: 0 in a config file. Until
// version 0.1 it meant no retries, while orderly.Worker reads 0 as the
// default; rather than change the meaning of a file silently, Load refuses
// it.
const MaxRetryZero = "0 is no longer accepted: it used to mean no retries, and now, as in Go's orderly.Worker, 0 would mean the default (25); write -1 or none for no retries, or leave the key out (or write 25) for the default"

// Values of NodeConfig.Scheduler.
const (
	// SchedulerLag serves the shard whose oldest due job waited longest.
	SchedulerLag = "lag"
	// SchedulerSeq serves the shards in turn.
	SchedulerSeq = "seq"
	// SchedulerWeighted shares the concurrency between queues by weight.
	SchedulerWeighted = "weighted"
	// SchedulerStrict serves the queues of the highest weight first.
	SchedulerStrict = "strict"
)

// Values of RetryConfig.Policy.
const (
	// RetryLowkiq is Lowkiq's policy: retry_count^4 + 15 + rand(30) *
	// (retry_count + 1) seconds. It takes no Base or Max.
	RetryLowkiq = "lowkiq"
	// RetryLinear waits Base * (retry_count + 1), at most Max if Max is set.
	RetryLinear = "linear"
	// RetryExponential waits Base * 2^retry_count, at most Max.
	RetryExponential = "exponential"
)

// Values of HandlerConfig.Type.
const (
	// HandlerLog logs each job and succeeds.
	HandlerLog = "log"
	// HandlerNoop succeeds without doing anything.
	HandlerNoop = "noop"
	// HandlerHTTP posts each batch to URL.
	HandlerHTTP = "http"
	// HandlerPull hands each batch to a pull worker (docs/workers.md).
	HandlerPull = "pull"
)

// Values of HandlerConfig.Client.
const (
	// HTTPClientDirect sends an http handler's requests to a plain http
	// URL with the webhook sender's direct HTTP/1.1 client, and the others
	// with net/http (the default).
	HTTPClientDirect = "direct"
	// HTTPClientNetHTTP sends every request of an http handler with
	// net/http (webhook.Config.NetHTTP).
	HTTPClientNetHTTP = "net/http"
)

// Values of HandlerConfig.Signature.
const (
	// SignatureOrderly signs an http handler's requests with the
	// Orderly-Signature header (the default).
	SignatureOrderly = "orderly"
	// SignatureStandard signs them with the Standard Webhooks headers
	// (webhook.Config.Scheme wire.SchemeStandard).
	SignatureStandard = "standard"
)

// Config is the node's resolved configuration. Load returns it with every
// default filled in and every value validated.
type Config struct {
	// File is the path of the config file that was read; empty if none.
	File string
	// Node holds the node's settings.
	Node NodeConfig
	// Queues are the queues the node serves, in file order; never empty
	// after Load.
	Queues []QueueConfig
	// Periodic are the jobs the node enqueues on a schedule
	// (docs/contract.md §9) [periodic].
	Periodic []PeriodicConfig
	// Warnings are problems that did not stop the load, such as an unknown
	// ORDERLY_* environment variable. The caller should log them.
	Warnings []string
}

// NodeConfig holds the settings of the node. The YAML key of each field is
// given in brackets with its default. Fields marked secret must never be
// logged; log Config.Redacted instead.
type NodeConfig struct {
	// Name identifies the node in the cluster [name; the host name].
	Name string
	// Bind is the gossip listen address, host:port [bind; DefaultBind].
	Bind string
	// Join lists the seeds [join; none]: host:port, a host that is a DNS
	// name standing for each of its addresses, or dns+srv:name for SRV
	// records; names are looked up again while the node runs.
	Join []string
	// HTTP is the HTTP API's listen address, host:port [http; DefaultHTTP].
	HTTP string
	// HTTPToken is the bearer token the HTTP API requires; empty means no
	// authentication [http_token; empty]. Secret.
	HTTPToken string
	// HTTPReadToken is a second bearer token that opens only reads: the
	// dashboard's views, every GET and /metrics; requests that change
	// state are answered 403. It needs HTTPToken [http_read_token; empty].
	// Secret.
	HTTPReadToken string
	// HTTPPublic lets the HTTP API listen on a non-loopback address without
	// an HTTPToken; otherwise such a node refuses to start [http_public;
	// false].
	HTTPPublic bool
	// HTTPAllowedHosts are the host names (or addresses) a request's Host
	// header may name, besides localhost, loopback addresses and the
	// address it arrived on, when the HTTP API has no token: the names of
	// a proxy in front, say; "*" allows any. Other names are answered 421
	// (a defence against DNS rebinding) [http_allowed_hosts; none].
	HTTPAllowedHosts []string
	// HTTPBasePath is the path under which the HTTP API, /metrics and the
	// dashboard answer, for a proxy that forwards a sub-path with the path
	// unchanged (web.Config.BasePath) [http_base_path; empty: the root].
	HTTPBasePath string
	// HTTPMaxConnections bounds the HTTP connections open at once
	// [http_max_connections; DefaultHTTPMaxConnections].
	HTTPMaxConnections int
	// HTTPMaxFeedWaits bounds the change-feed long polls waiting at once
	// [http_max_feed_waits; DefaultHTTPMaxFeedWaits].
	HTTPMaxFeedWaits int
	// HTTPTLSCert is the path of the PEM certificate (with its chain) the
	// HTTP API and dashboard serve HTTPS with; set with HTTPTLSKey
	// [http_tls_cert; empty: plain HTTP].
	HTTPTLSCert string
	// HTTPTLSKey is the path of the PEM private key of HTTPTLSCert
	// [http_tls_key; empty].
	HTTPTLSKey string
	// ActorAddr is the protoactor remote's listen address, host:port; empty
	// turns it off [actor_addr; empty].
	ActorAddr string
	// ActorAdvertiseAddr is the address other hosts reach the actor remote
	// at, host:port, which the node advertises; required when ActorAddr
	// binds every interface (0.0.0.0, [::]) [actor_advertise_addr; empty:
	// ActorAddr].
	ActorAdvertiseAddr string
	// ActorToken is the token every client of the actor remote presents
	// (gRPC metadata orderly-actor-token); empty means no authentication
	// [actor_token; empty]. Secret.
	ActorToken string
	// ActorTLSCert, ActorTLSKey and ActorTLSCA (PEM files, all three or
	// none) serve the actor remote over mutual TLS: only clients with a
	// certificate the CA signed can connect (orderly.LoadActorTLS)
	// [actor_tls_cert, actor_tls_key, actor_tls_ca; empty: plaintext gRPC].
	ActorTLSCert, ActorTLSKey, ActorTLSCA string
	// ActorPublic lets the actor remote listen on a non-loopback address
	// without an ActorToken or mutual TLS; otherwise such a node refuses to
	// start [actor_public; false].
	ActorPublic bool
	// Redis is the store's URL (redis://, rediss://, unix://,
	// redis+cluster://, redis+sentinel:// and their TLS forms); empty means
	// the embedded in-memory store [redis; empty]. Its password is secret.
	Redis string
	// RedisPrefix prefixes every Redis key [redis_prefix;
	// DefaultRedisPrefix].
	RedisPrefix string
	// AllowEviction accepts a Redis whose maxmemory-policy is not
	// noeviction [allow_eviction; false].
	AllowEviction bool
	// Durability is when a write to Redis counts as done: DurabilityAsync,
	// once the master applied it, or DurabilityReplicated, once
	// DurabilityReplicas replicas have it, waiting at most
	// DurabilityTimeout (docs/contract.md §4) [durability; async;
	// durability_replicas; 1; durability_timeout; 1s].
	Durability         string
	DurabilityReplicas int
	DurabilityTimeout  time.Duration
	// Concurrency is how many batches the node handles at once, 1..10000
	// [concurrency; DefaultConcurrency].
	Concurrency int
	// Scheduler picks the next shard to serve: SchedulerLag, SchedulerSeq,
	// SchedulerWeighted or SchedulerStrict
	// [scheduler; DefaultScheduler].
	Scheduler string
	// LeaseTTL is the lifetime of a shard lease, at least 300ms [lease_ttl;
	// DefaultLeaseTTL].
	LeaseTTL time.Duration
	// ShutdownTimeout is how long a stopping node waits for its work
	// [shutdown_timeout; DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// HandoffTimeout is how long a shard's handoff between nodes may take
	// [handoff_timeout; DefaultHandoffTimeout].
	HandoffTimeout time.Duration
	// MorgueTTL is how long a dead payload stays in the morgue [morgue_ttl;
	// DefaultMorgueTTL].
	MorgueTTL time.Duration
	// MaxPayloadBytes is the largest payload accepted, 1 byte..512 MiB
	// [max_payload_bytes; DefaultMaxPayloadBytes].
	MaxPayloadBytes int
	// LogLevel is debug, info, warn or error [log_level; DefaultLogLevel].
	LogLevel string
	// LogFormat is text or json [log_format; DefaultLogFormat].
	LogFormat string
	// GossipKey is the base64 encoding of the 16, 24 or 32-byte AES key that
	// encrypts gossip; empty means plaintext gossip [gossip_key; empty].
	// Secret.
	GossipKey string
	// GossipPublic lets gossip listen on a non-loopback address without a
	// GossipKey; otherwise such a node refuses to start [gossip_public;
	// false].
	GossipPublic bool
	// ClusterLabel is a label every gossip packet carries, keeping clusters
	// that share a network apart [cluster_label; empty].
	ClusterLabel string
	// DebugAddr is the listen address of the debug listener, which serves
	// net/http/pprof without authentication; a missing host means
	// 127.0.0.1. It must not be reachable by others [debug_addr; empty:
	// off].
	DebugAddr string
}

// QueueConfig holds the settings of one queue. The YAML key of each field is
// given in brackets with its default.
type QueueConfig struct {
	// Name names the queue: 1 to 128 ASCII letters, digits, '_', '-' and
	// '.', starting with a letter or digit [name; required].
	Name string
	// Shards is the queue's fixed number of shards, 1..4096 [shards;
	// DefaultShards].
	Shards int
	// BatchSize is the most ids per handler call, 1..1000 [batch_size;
	// DefaultBatchSize].
	BatchSize int
	// Prefetch is how many ids a shard fetches per round trip, batch_size
	// to 1000; 0 means max(batch_size, 10) [prefetch; 0].
	Prefetch int
	// MaxPrefetch is the most ids a busy shard fetches per round trip,
	// prefetch to 1000; 0 means 100 when prefetch is 0 too, else prefetch
	// (a fixed window) [max_prefetch; 0].
	MaxPrefetch int
	// ConcurrentCalls is how many handler calls of one shard may run at
	// once, over distinct ids of its window, 1..1000; 0 means 1, or, on a
	// pull queue without max_concurrency, every call of a window
	// (orderly.Worker.ConcurrentCalls) [concurrent_calls; 0].
	ConcurrentCalls int
	// MaxRetryCount is how many failures a payload survives before it goes
	// to the morgue; NoRetries sends it there at its first failure, and 0
	// means DefaultMaxRetryCount, as in orderly.Worker [max_retry_count;
	// DefaultMaxRetryCount]. In the file, -1 and none mean NoRetries, and 0
	// is refused (MaxRetryZero).
	MaxRetryCount int
	// Timeout bounds one handler call; 0 means the default,
	// orderly.DefaultCallTimeout (an http handler's call is also bounded by
	// handler.timeout) [timeout; 0].
	Timeout time.Duration
	// MaxPayloadsPerCall is the most payloads of one id a handler call
	// receives, 1 to orderly.MaxMaxPayloadsPerCall; 0 means
	// orderly.DefaultMaxPayloadsPerCall [max_payloads_per_call; 0].
	MaxPayloadsPerCall int
	// State makes the queue stateful: each id owns a durable state handed
	// to the handler and changed with its acknowledgement
	// (docs/contract.md §11) [state; false].
	State bool
	// MaxStateBytes is the largest state of one id; 0 means
	// orderly.DefaultMaxStateBytes [max_state_bytes; 0].
	MaxStateBytes int
	// FeedMaxLen bounds a stateful queue's change feed: nil means
	// orderly.DefaultFeedMaxLen, 0 no feed [feed_max_len; 10000].
	FeedMaxLen *int
	// DedupWindow is the queue's deduplication window (docs/contract.md
	// §3.12): a job enqueued with a dedup key seen for its id within it
	// is acknowledged as a duplicate and not stored; 0 turns it off
	// [dedup_window; 0].
	DedupWindow time.Duration
	// RetainFinished keeps a finished record of each acknowledged id for
	// that long, at most MaxFinished per shard (0:
	// persistence.DefaultMaxFinished), as orderly.Worker's
	// (docs/contract.md §3.14) [retain_finished; 0: off; max_finished; 0].
	RetainFinished time.Duration
	MaxFinished    int
	// MaxConcurrency is the most handler calls of the queue at once across
	// the cluster (docs/contract.md §9); 0 means no limit
	// [max_concurrency; 0].
	MaxConcurrency int
	// Weight is the queue's share of a node's concurrency under the
	// weighted scheduler, and its rank under the strict one; 0 means 1
	// [weight; 0].
	Weight int
	// RateLimit bounds how fast the queue's handler calls start across the
	// cluster (docs/contract.md §9); nil means no limit [rate_limit].
	RateLimit *RateLimitConfig
	// Retry is the backoff policy [retry; DefaultRetryPolicy].
	Retry RetryConfig
	// Handler processes the queue's batches [handler; DefaultHandlerType].
	Handler HandlerConfig
}

// PeriodicConfig is a periodic job: Queue receives a job ID (with Payload)
// at each tick of Schedule, a 5-field cron expression or "@every <d>".
type PeriodicConfig struct {
	Name, Queue, Schedule, ID string
	// Payload is the job's payload, the compact JSON of the file's value
	// [payload; none: empty].
	Payload []byte
}

// RateLimitConfig is a queue's rate limit: handler calls start at most
// PerSecond a second across the cluster, in bursts of at most Burst.
type RateLimitConfig struct {
	// PerSecond is the sustained rate, > 0 [per_second; required].
	PerSecond float64
	// Burst is the most calls at once after a quiet period; 0 means
	// max(1, ceil(PerSecond)) [burst; 0].
	Burst int
}

// RetryConfig is a queue's backoff policy.
type RetryConfig struct {
	// Policy is RetryLowkiq, RetryLinear or RetryExponential [policy].
	Policy string
	// Base is the first wait of linear and exponential; zero for lowkiq
	// [base].
	Base time.Duration
	// Max caps the wait: required for exponential, optional for linear
	// (zero: no cap), zero for lowkiq [max].
	Max time.Duration
}

// HandlerConfig is what processes a queue's batches.
type HandlerConfig struct {
	// Type is HandlerLog, HandlerNoop, HandlerHTTP or HandlerPull [type].
	Type string
	// URL is where an http handler posts batches: an absolute http or
	// https URL; empty for the other types [url].
	URL string
	// RetriesExhaustedURL, for an http handler, receives the dead jobs of
	// the queue (what its settles moved to the morgue: retries exhausted,
	// or "dead" in an answer), POSTed like a delivery and signed the same
	// way, at least once (docs/webhooks.md) [retries_exhausted_url; empty:
	// none].
	RetriesExhaustedURL string
	// Timeout bounds one request of an http handler
	// [timeout; DefaultHTTPHandlerTimeout]; zero for the other types.
	Timeout time.Duration
	// HidePayloads keeps a log handler from printing payloads; it prints
	// the start of each (LogPayloadBytes) otherwise. In the file it is
	// payloads: false [payloads; true]; only for the log type.
	HidePayloads bool
	// Secret signs each request of an http handler with the
	// Orderly-Signature header (webhook.Config.Secret) [secret; empty: no
	// signature]. Secret.
	Secret string
	// Signature is the scheme the secret signs with: SignatureOrderly
	// (the Orderly-Signature header) or SignatureStandard (Standard
	// Webhooks: Webhook-Id, Webhook-Timestamp, Webhook-Signature; the
	// secret is then "whsec_" and a base64 key) [signature; empty:
	// orderly]. Only for the http type.
	Signature string
	// Headers are static headers sent with each request of an http
	// handler, e.g. Authorization [headers; none]. Names that Orderly or
	// HTTP set (Orderly-*, Content-Type, Host...) are refused. Their values
	// are treated as secrets.
	Headers map[string]string
	// Lease is a pull handler's lease: how long a worker holds a batch
	// after its pull unless it extends it [lease; pull.DefaultLease, or half
	// the queue's timeout when that is shorter]; zero for the other types.
	// The queue's timeout bounds every lease and extension; a pull queue
	// without one gets twice the lease.
	Lease time.Duration
	// WorkerToken, for a pull handler, is a bearer token that opens only
	// this queue's pull routes [worker_token; empty: none]. Secret.
	WorkerToken string
	// Client is how an http handler sends its requests: HTTPClientDirect
	// or HTTPClientNetHTTP [client; empty: direct]; empty for the other
	// types.
	Client string
}

// defaultNode returns the node's defaults, except Name, which Load fills
// from the host name when no source sets it.
func defaultNode() NodeConfig {
	return NodeConfig{
		Bind:               DefaultBind,
		HTTP:               DefaultHTTP,
		HTTPMaxConnections: DefaultHTTPMaxConnections,
		HTTPMaxFeedWaits:   DefaultHTTPMaxFeedWaits,
		RedisPrefix:        DefaultRedisPrefix,
		Durability:         DurabilityAsync,
		DurabilityReplicas: redisstore.DefaultDurabilityReplicas,
		DurabilityTimeout:  redisstore.DefaultDurabilityTimeout,
		Concurrency:        DefaultConcurrency,
		Scheduler:          DefaultScheduler,
		LeaseTTL:           DefaultLeaseTTL,
		ShutdownTimeout:    DefaultShutdownTimeout,
		HandoffTimeout:     DefaultHandoffTimeout,
		MorgueTTL:          DefaultMorgueTTL,
		MaxPayloadBytes:    DefaultMaxPayloadBytes,
		LogLevel:           DefaultLogLevel,
		LogFormat:          DefaultLogFormat,
	}
}

// defaultQueue returns a queue with every default: the log handler and
// lowkiq retries.
func defaultQueue(name string) QueueConfig {
	return QueueConfig{
		Name:          name,
		Shards:        DefaultShards,
		BatchSize:     DefaultBatchSize,
		MaxRetryCount: DefaultMaxRetryCount,
		Retry:         RetryConfig{Policy: DefaultRetryPolicy},
		Handler:       HandlerConfig{Type: DefaultHandlerType},
	}
}

// redactedMark replaces a secret in Redacted.
const redactedMark = "REDACTED"

// Redacted returns a deep copy of c fit for logging: the HTTP tokens, the
// gossip key, the passwords in the Redis and handler URLs, the handlers'
// secrets and the values of their headers are replaced by
// "REDACTED" (an empty secret stays empty, which shows that none is set).
func (c *Config) Redacted() *Config {
	out := *c
	out.Node.Join = slices.Clone(c.Node.Join)
	out.Queues = slices.Clone(c.Queues)
	out.Warnings = slices.Clone(c.Warnings)
	out.Node.HTTPToken = redactSecret(c.Node.HTTPToken)
	out.Node.HTTPReadToken = redactSecret(c.Node.HTTPReadToken)
	out.Node.GossipKey = redactSecret(c.Node.GossipKey)
	if c.Node.Redis != "" {
		out.Node.Redis = redisurl.RedactWith(c.Node.Redis, redactedMark)
	}
	out.Node.ActorToken = redactSecret(c.Node.ActorToken)
	for i := range out.Queues {
		h := &out.Queues[i].Handler
		h.URL = redactURL(h.URL)
		h.RetriesExhaustedURL = redactURL(h.RetriesExhaustedURL)
		h.Secret = redactSecret(h.Secret)
		h.WorkerToken = redactSecret(h.WorkerToken)
		if h.Headers != nil {
			headers := make(map[string]string, len(h.Headers))
			for k, v := range h.Headers {
				headers[k] = redactSecret(v)
			}
			h.Headers = headers
		}
	}
	return &out
}

func redactSecret(s string) string {
	if s == "" {
		return ""
	}
	return redactedMark
}

// redactURL replaces the password in u. A URL that does not parse is
// replaced whole, since where its password is cannot be known.
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return redactedMark
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), redactedMark)
	}
	return u.String()
}
