// Package config turns the node's three configuration sources into one
// validated Config: a YAML file, ORDERLY_* environment variables and
// command-line flags. A flag overrides the environment, which overrides the
// file, which overrides the defaults. Queues are defined only in the file;
// with none, the node serves one queue "default" whose handler logs each
// job, so a new user can enqueue without writing any configuration.
//
// The file (named by --config or ORDERLY_CONFIG) looks like this; every key
// is optional except a queue's name, and a key with an empty (null) value
// counts as absent:
//
//	node:
//	  name: n1                          # default: the host name
//	  bind: 127.0.0.1:7946              # gossip listen address
//	  join: [127.0.0.1:7947]            # seeds
//	  http: 127.0.0.1:8080
//	  http_token: s3cret                # bearer token of the HTTP API
//	  http_read_token: v1ew3r           # opens reads only: views, GETs, /metrics
//	  http_allowed_hosts: [orderly.internal]  # Host names answered without a token
//	  http_base_path: /orderly          # serve under a proxy's sub-path; empty = the root
//	  http_max_connections: 1024        # at most half the open-file limit
//	  http_max_feed_waits: 256          # change-feed long polls waiting at once
//	  http_tls_cert: /etc/orderly/tls.crt     # serve HTTPS (with http_tls_key)
//	  http_tls_key: /etc/orderly/tls.key
//	  actor_addr: 127.0.0.1:8090        # protoactor remote; empty = off
//	  actor_advertise_addr: 10.0.0.5:8090     # what others dial; needed for 0.0.0.0
//	  actor_token: s3cret               # required from actor remote clients
//	  actor_tls_cert: /etc/orderly/actor.crt  # mutual TLS (with actor_tls_key, actor_tls_ca)
//	  actor_tls_key: /etc/orderly/actor.key
//	  actor_tls_ca: /etc/orderly/ca.crt
//	  actor_public: false               # non-loopback actor_addr without a token or TLS
//	  redis: redis://127.0.0.1:6379/0   # empty = embedded in-memory store
//	  redis_prefix: orderly
//	  allow_eviction: false
//	  durability: async                 # async | replicated (WAIT for replicas)
//	  durability_replicas: 1
//	  durability_timeout: 1s
//	  http_public: false
//	  concurrency: 5
//	  scheduler: lag                    # lag | seq | weighted | strict (the last two read each queue's weight)
//	  lease_ttl: 3s
//	  shutdown_timeout: 25s
//	  handoff_timeout: 30s
//	  morgue_ttl: 4320h
//	  max_payload_bytes: 1048576
//	  log_level: info                   # debug | info | warn | error
//	  log_format: text                  # text | json
//	  gossip_key: <base64 of 16, 24 or 32 bytes>
//	  gossip_public: false              # non-loopback bind without gossip_key
//	  cluster_label: prod
//	queues:
//	  - name: orders
//	    shards: 8
//	    batch_size: 10
//	    prefetch: 10                  # ids fetched per round trip (default max(batch_size, 10))
//	    max_prefetch: 100             # ids per round trip while busy (default 100 if prefetch is unset, else prefetch)
//	    max_retry_count: 5              # default 25; -1 or none: to the morgue at the first failure
//	    max_payloads_per_call: 1000     # most payloads of one id per call (default 1000)
//	    max_concurrency: 4              # most calls at once across the cluster (default 0: no limit)
//	    weight: 1                       # share of a node's concurrency (scheduler weighted) or rank (strict); default 1
//	    rate_limit: {per_second: 100, burst: 20}   # calls started across the cluster (burst default ceil(per_second))
//	    timeout: 0s                     # bounds one handler call; 0 = the default, 30s
//	    state: false                    # stateful queue: per-id state committed with the ack
//	    max_state_bytes: 1048576        # largest state of one id (default 1 MiB)
//	    feed_max_len: 10000             # a stateful queue's change feed keeps the latest n changes; 0 = no feed
//	    retain_finished: 0s             # keep acknowledged ids (finished_at, attempts, result) this long; 0 = off
//	    max_finished: 10000             # most finished ids kept per shard
//	    retry: {policy: linear, base: 10s}   # lowkiq | linear | exponential (base, max)
//	    handler: {type: http, url: http://127.0.0.1:9000/perform, timeout: 30s}  # or log, noop
//	  - name: billing
//	    handler:
//	      type: http
//	      url: https://billing.example/hooks/orderly
//	      secret: s3cr3t                # signs each request: Orderly-Signature
//	      headers: {Authorization: Bearer abc}   # static headers; not Orderly-*, Content-Type, Host...
//	      client: net/http              # direct (default) or net/http; see below
//	  - name: audit
//	    handler: {type: log, payloads: false}  # log ids and counts, not payloads
//
// An http handler sends a request to a plain http:// URL with its direct
// HTTP/1.1 client (client: direct, the default): on the calling goroutine,
// over kept-alive connections, at about half of net/http's CPU per call on
// the node; it reads answers as net/http does. client: net/http sends
// every request with Go's net/http instead, for a receiver or a network
// path that the direct client does not serve as well. https:// URLs, a
// proxy from the environment and the headers net/http writes its own way
// always take net/http.
//
// A queue whose handler is log prints one line per job, with the first 200
// bytes (LogPayloadBytes) of its first three payloads; payloads: false
// prints none, for payloads that must not reach the logs.
//
// The HTTP API is safe by default: it listens on loopback; beyond it, it
// needs http_token (or http_public to accept the risk), and warns when the
// token would travel in plain HTTP (set http_tls_cert and http_tls_key, or
// put a TLS proxy in front). Without a token it answers only requests whose
// Host is localhost, a loopback address, its own address, the host of http
// when that is a name, or one of http_allowed_hosts. Slow or silent clients
// are cut off by deadlines, and at most http_max_connections connections
// are open at once (lowered at start to half the open-file limit, which
// Redis, gossip and webhooks share). The queues of a node have at most
// 8,192 shards in total (orderly.MaxNodeShards).
//
// A queue's max_retry_count is how many failures a payload survives before
// it goes to the morgue: 25 when the key is absent, -1 or none for no
// retries. 0 is an error: it used to mean no retries, while Go's
// orderly.Worker reads 0 as the default, so a file that says 0 must now say
// which it means (MaxRetryZero).
//
// Durations are Go duration strings ("3s", "1m30s"); a bare number is
// rejected. Every node key has an environment variable (ORDERLY_ and the key
// in upper case, e.g. ORDERLY_LEASE_TTL) and a flag (the key with '-' for
// '_', e.g. --lease-ttl); ORDERLY_JOIN and --join take a comma-separated
// list. An environment variable set to the empty string counts as unset; a
// flag set to the empty string counts as set.
//
// Load reports every problem it finds at once, each naming the file key
// (with its line), the environment variable or the flag that holds the bad
// value. A value is checked in every source that gives it, even when a
// source of higher precedence overrides it. Unknown ORDERLY_* variables are
// warnings (Config.Warnings), not errors.
//
// The package is a leaf: it does not import the rest of Orderly, and the
// node's command maps a Config to the runtime's types.
package config
