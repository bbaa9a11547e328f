package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testHost = "testhost"

// loadFile writes file (if not empty) to a temporary config file and loads
// it with env and args; the host name is testHost. It returns the file's
// path too.
func loadFile(t *testing.T, file string, env []string, args ...string) (*Config, string, error) {
	t.Helper()
	path := ""
	if file != "" {
		path = filepath.Join(t.TempDir(), "orderly.yaml")
		require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
		args = append([]string{"--config", path}, args...)
	}
	l := loader{readFile: readFile, hostname: func() (string, error) { return testHost, nil }}
	cfg, err := l.load(args, env, io.Discard)
	return cfg, path, err
}

// defaults returns what Load returns with nothing set.
func defaults() *Config {
	n := defaultNode()
	n.Name = testHost
	return &Config{Node: n, Queues: []QueueConfig{defaultQueue(DefaultQueueName)}}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	cfg, err := Load(nil, nil, nil)
	require.NoError(t, err)
	require.Equal(t, &Config{
		Node: NodeConfig{
			Name:               host,
			Bind:               "127.0.0.1:7946",
			HTTP:               "127.0.0.1:8080",
			HTTPMaxConnections: 1024,
			HTTPMaxFeedWaits:   256,
			RedisPrefix:        "orderly",
			Durability:         "async",
			DurabilityReplicas: 1,
			DurabilityTimeout:  time.Second,
			Concurrency:        5,
			Scheduler:          "lag",
			LeaseTTL:           3 * time.Second,
			ShutdownTimeout:    25 * time.Second,
			HandoffTimeout:     30 * time.Second,
			MorgueTTL:          4320 * time.Hour,
			MaxPayloadBytes:    1048576,
			LogLevel:           "info",
			LogFormat:          "text",
		},
		Queues: []QueueConfig{{
			Name:          "default",
			Shards:        5,
			BatchSize:     1,
			MaxRetryCount: 25,
			Retry:         RetryConfig{Policy: "lowkiq"},
			Handler:       HandlerConfig{Type: "log"},
		}},
	}, cfg)
	require.NoError(t, cfg.Validate())
}

func TestEmptyFiles(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{
		"blank":         "\n\n",
		"comments":      "# nothing here\n",
		"document mark": "---\n",
		"null":          "~\n",
		"null sections": "node:\nqueues:\n",
		"no queues":     "queues: []\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, path, err := loadFile(t, file, nil)
			require.NoError(t, err)
			want := defaults()
			want.File = path
			require.Equal(t, want, cfg)
		})
	}
}

// exampleFile is the product's example, with every key.
const exampleFile = `node:
  name: n1                      # default: hostname
  bind: 127.0.0.1:7946          # gossip listen address
  join: [127.0.0.1:7947]        # seeds
  http: 127.0.0.1:8080
  actor_addr: 127.0.0.1:8090    # protoactor remote; empty = off
  redis: redis://127.0.0.1:6379/0   # empty = embedded in-memory store
  concurrency: 5
  scheduler: lag                # lag | seq
  lease_ttl: 3s
  shutdown_timeout: 25s
  http_token: s3cret-token
  allow_eviction: true
  durability: replicated        # async | replicated
  durability_replicas: 2
  durability_timeout: 1500ms
  redis_prefix: orderly-test
  handoff_timeout: 1m
  morgue_ttl: 720h
  max_payload_bytes: 65536
  log_level: debug
  log_format: json
  gossip_key: MDEyMzQ1Njc4OWFiY2RlZg==
  cluster_label: prod
  http_allowed_hosts: [orderly.internal]
  http_max_connections: 2048
  http_tls_cert: /etc/orderly/tls.crt
  http_tls_key: /etc/orderly/tls.key
queues:
  - name: orders
    shards: 8
    batch_size: 10
    max_retry_count: 5
    max_payloads_per_call: 1000
    state: true
    max_state_bytes: 65536
    feed_max_len: 500
    retain_finished: 24h
    max_finished: 5000
    max_concurrency: 4
    rate_limit: {per_second: 100, burst: 20}
    retry: {policy: linear, base: 10s}       # lowkiq | linear (base*(n+1)) | exponential (base*2^n, max)
    handler: {type: http, url: http://127.0.0.1:9000/perform, timeout: 30s, client: net/http}   # or {type: log} / {type: noop}
  - name: mail.out
    timeout: 1m30s
    max_retry_count: none
    retry:
      policy: exponential
      base: 1s
      max: 1h
    handler:
      type: noop
  - name: audit
    dedup_window: 10m
  - name: quiet
    handler: {type: log, payloads: false}
periodic:
  - {name: nightly-report, queue: orders, schedule: "0 3 * * *", id: report}
  - {name: heartbeat, queue: audit, schedule: "@every 10s", id: hb, payload: {"ping": true}}
`

func TestExampleFile(t *testing.T) {
	t.Parallel()
	cfg, path, err := loadFile(t, exampleFile, nil)
	require.NoError(t, err)
	feedLen := 500
	require.Equal(t, &Config{
		File: path,
		Node: NodeConfig{
			Name:               "n1",
			Bind:               "127.0.0.1:7946",
			Join:               []string{"127.0.0.1:7947"},
			HTTP:               "127.0.0.1:8080",
			HTTPToken:          "s3cret-token",
			HTTPAllowedHosts:   []string{"orderly.internal"},
			HTTPMaxConnections: 2048,
			HTTPMaxFeedWaits:   256,
			HTTPTLSCert:        "/etc/orderly/tls.crt",
			HTTPTLSKey:         "/etc/orderly/tls.key",
			ActorAddr:          "127.0.0.1:8090",
			Redis:              "redis://127.0.0.1:6379/0",
			RedisPrefix:        "orderly-test",
			AllowEviction:      true,
			Durability:         "replicated",
			DurabilityReplicas: 2,
			DurabilityTimeout:  1500 * time.Millisecond,
			Concurrency:        5,
			Scheduler:          "lag",
			LeaseTTL:           3 * time.Second,
			ShutdownTimeout:    25 * time.Second,
			HandoffTimeout:     time.Minute,
			MorgueTTL:          720 * time.Hour,
			MaxPayloadBytes:    65536,
			LogLevel:           "debug",
			LogFormat:          "json",
			GossipKey:          "MDEyMzQ1Njc4OWFiY2RlZg==",
			ClusterLabel:       "prod",
		},
		Queues: []QueueConfig{
			{
				Name:               "orders",
				Shards:             8,
				BatchSize:          10,
				MaxRetryCount:      5,
				MaxPayloadsPerCall: 1000,
				State:              true,
				MaxStateBytes:      65536,
				FeedMaxLen:         &feedLen,
				RetainFinished:     24 * time.Hour,
				MaxFinished:        5000,
				MaxConcurrency:     4,
				RateLimit:          &RateLimitConfig{PerSecond: 100, Burst: 20},
				Retry:              RetryConfig{Policy: "linear", Base: 10 * time.Second},
				Handler:            HandlerConfig{Type: "http", URL: "http://127.0.0.1:9000/perform", Timeout: 30 * time.Second, Client: HTTPClientNetHTTP},
			},
			{
				Name:          "mail.out",
				Shards:        5,
				BatchSize:     1,
				MaxRetryCount: NoRetries, // none: to the morgue at the first failure
				Timeout:       90 * time.Second,
				Retry:         RetryConfig{Policy: "exponential", Base: time.Second, Max: time.Hour},
				Handler:       HandlerConfig{Type: "noop"},
			},
			func() QueueConfig { q := defaultQueue("audit"); q.DedupWindow = 10 * time.Minute; return q }(),
			{
				Name:          "quiet",
				Shards:        5,
				BatchSize:     1,
				MaxRetryCount: 25,
				Retry:         RetryConfig{Policy: "lowkiq"},
				Handler:       HandlerConfig{Type: "log", HidePayloads: true},
			},
		},
		Periodic: []PeriodicConfig{
			{Name: "nightly-report", Queue: "orders", Schedule: "0 3 * * *", ID: "report"},
			{Name: "heartbeat", Queue: "audit", Schedule: "@every 10s", ID: "hb", Payload: []byte(`{"ping":true}`)},
		},
	}, cfg)
}

func TestFileDetails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		check      func(t *testing.T, c *Config)
	}{
		{"http handler timeout defaults to 30s", "queues: [{name: a, handler: {type: http, url: 'https://h/p'}}]",
			func(t *testing.T, c *Config) {
				require.Equal(t, HandlerConfig{Type: "http", URL: "https://h/p", Timeout: 30 * time.Second}, c.Queues[0].Handler)
			}},
		{"null values count as absent", "node: {redis: , concurrency: ~}\nqueues: [{name: a, handler: , max_retry_count: }]",
			func(t *testing.T, c *Config) {
				require.Equal(t, defaults().Node, c.Node)
				require.Equal(t, defaultQueue("a"), c.Queues[0])
			}},
		{"aliases", "queues:\n  - {name: a, handler: &h {type: http, url: 'http://h/p'}}\n  - {name: b, handler: *h}\n",
			func(t *testing.T, c *Config) {
				require.Equal(t, c.Queues[0].Handler, c.Queues[1].Handler)
				require.Equal(t, "http://h/p", c.Queues[1].Handler.URL)
			}},
		{"yes is a boolean", "node: {allow_eviction: yes}",
			func(t *testing.T, c *Config) { require.True(t, c.Node.AllowEviction) }},
		{"a number is a string for string keys", "node: {name: 42, cluster_label: 7}",
			func(t *testing.T, c *Config) {
				require.Equal(t, "42", c.Node.Name)
				require.Equal(t, "7", c.Node.ClusterLabel)
			}},
		{"empty join list", "node: {join: []}",
			func(t *testing.T, c *Config) { require.Empty(t, c.Node.Join) }},
		{"linear with a cap", "queues: [{name: a, retry: {policy: linear, base: 1s, max: 1m}}]",
			func(t *testing.T, c *Config) {
				require.Equal(t, RetryConfig{Policy: "linear", Base: time.Second, Max: time.Minute}, c.Queues[0].Retry)
			}},
		{"listen addresses may omit the host", "node: {bind: ':7946', http: ':0', actor_addr: '[::1]:8090'}",
			func(t *testing.T, c *Config) { require.Equal(t, ":7946", c.Node.Bind) }},
		{"redis URLs", "node: {redis: 'rediss://user:pw@redis.example:6380/2?protocol=3'}",
			func(t *testing.T, c *Config) { require.Contains(t, c.Node.Redis, "rediss://") }},
		{"cluster URL", "node: {redis: 'redis+cluster://a:7000,b:7001,c?dial_timeout=2s'}",
			func(t *testing.T, c *Config) {
				require.Equal(t, "redis+cluster://a:7000,b:7001,c?dial_timeout=2s", c.Node.Redis)
			}},
		{"sentinel URL", "node: {redis: 'rediss+sentinel://s1:26379,s2:26379/main/2?tls_insecure_skip_verify=true'}",
			func(t *testing.T, c *Config) { require.Contains(t, c.Node.Redis, "rediss+sentinel://") }},
		{"unix socket", "node: {redis: 'unix:///run/redis.sock?db=1'}",
			func(t *testing.T, c *Config) { require.Equal(t, "unix:///run/redis.sock?db=1", c.Node.Redis) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := loadFile(t, tc.file, nil)
			require.NoError(t, err)
			tc.check(t, cfg)
			require.NoError(t, cfg.Validate())
		})
	}
}

// TestJoinDNS: a seed may be a DNS name with a port or an SRV name, beside
// addresses, in the file, the environment and the flag.
func TestJoinDNS(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "node:\n  join: [orderly.ns.svc.cluster.local:7946, 'dns+srv:_gossip._tcp.orderly.ns.svc']\n", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"orderly.ns.svc.cluster.local:7946", "dns+srv:_gossip._tcp.orderly.ns.svc"}, cfg.Node.Join)
	cfg, _, err = loadFile(t, "", []string{"ORDERLY_JOIN=dns+srv:orderly.test,10.0.0.1:7946"})
	require.NoError(t, err)
	require.Equal(t, []string{"dns+srv:orderly.test", "10.0.0.1:7946"}, cfg.Node.Join)
	cfg, _, err = loadFile(t, "", nil, "--join", "dns+srv:orderly.test")
	require.NoError(t, err)
	require.Equal(t, []string{"dns+srv:orderly.test"}, cfg.Node.Join)
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	const file = `node:
  name: from-file
  bind: 10.0.0.1:1
  http: 10.0.0.1:2
  concurrency: 7
  lease_ttl: 4s
  join: [a:1, b:2]
  redis: redis://file:6379/0
  allow_eviction: true
`
	env := []string{
		"ORDERLY_HTTP=10.0.0.2:2",
		"ORDERLY_CONCURRENCY=8",
		"ORDERLY_LEASE_TTL=5s",
		"ORDERLY_JOIN=c:3, d:4",
		"ORDERLY_LOG_LEVEL=warn",
		"ORDERLY_NAME=", // empty: unset
		"ORDERLY_ALLOW_EVICTION=false",
	}
	args := []string{"--concurrency", "9", "-join=e:5", "--redis=", "--log-format", "json"}
	cfg, _, err := loadFile(t, file, env, args...)
	require.NoError(t, err)
	n := cfg.Node
	require.Equal(t, "from-file", n.Name)                       // file only; empty env ignored
	require.Equal(t, "10.0.0.1:1", n.Bind)                      // file only
	require.Equal(t, "10.0.0.2:2", n.HTTP)                      // env over file
	require.Equal(t, 9, n.Concurrency)                          // flag over env over file
	require.Equal(t, 5*time.Second, n.LeaseTTL)                 // env over file
	require.Equal(t, []string{"e:5"}, n.Join)                   // flag over env over file
	require.Equal(t, "", n.Redis)                               // an empty flag is set
	require.Equal(t, "warn", n.LogLevel)                        // env over default
	require.Equal(t, "json", n.LogFormat)                       // flag over default
	require.False(t, n.AllowEviction)                           // env over file
	require.Equal(t, DefaultShutdownTimeout, n.ShutdownTimeout) // default
}

func TestPrecedenceOfTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env.yaml")
	flagFile := filepath.Join(dir, "flag.yaml")
	require.NoError(t, os.WriteFile(envFile, []byte("node: {name: env-file}"), 0o600))
	require.NoError(t, os.WriteFile(flagFile, []byte("node: {name: flag-file}"), 0o600))
	env := []string{"ORDERLY_CONFIG=" + envFile}

	cfg, err := Load(nil, env, nil)
	require.NoError(t, err)
	require.Equal(t, envFile, cfg.File)
	require.Equal(t, "env-file", cfg.Node.Name)

	cfg, err = Load([]string{"--config", flagFile}, env, nil)
	require.NoError(t, err)
	require.Equal(t, flagFile, cfg.File)
	require.Equal(t, "flag-file", cfg.Node.Name)

	cfg, err = Load([]string{"--config="}, env, nil) // an empty flag: no file
	require.NoError(t, err)
	require.Empty(t, cfg.File)

	cfg, err = Load([]string{"--name", "flag"}, append(env, "ORDERLY_NAME=env"), nil)
	require.NoError(t, err)
	require.Equal(t, "flag", cfg.Node.Name)
}

func TestEveryKeyHasEnvAndFlag(t *testing.T) {
	t.Parallel()
	// One value per setting, different from the default, in each source.
	values := map[string][2]string{ // key: file/env value, flag value
		"name":                 {"n-a", "n-b"},
		"bind":                 {"1.1.1.1:1", "2.2.2.2:2"},
		"join":                 {"a:1", "b:2"},
		"http":                 {"1.1.1.1:3", "2.2.2.2:4"},
		"http_token":           {"tok-a", "tok-b"},
		"http_read_token":      {"rtok-a", "rtok-b"},
		"actor_addr":           {"1.1.1.1:5", "2.2.2.2:6"},
		"actor_advertise_addr": {"1.1.1.1:7", "host.example:8"},
		"actor_token":          {"atok-a", "atok-b"},
		"actor_public":         {"true", "false"},
		"gossip_public":        {"true", "false"},
		"redis":                {"redis://a:1/0", "redis://b:2/0"},
		"redis_prefix":         {"pa", "pb"},
		"allow_eviction":       {"true", "false"},
		"http_public":          {"true", "false"},
		"concurrency":          {"11", "12"},
		"scheduler":            {"seq", "lag"},
		"lease_ttl":            {"4s", "5s"},
		"shutdown_timeout":     {"6s", "7s"},
		"handoff_timeout":      {"8s", "9s"},
		"morgue_ttl":           {"10h", "11h"},
		"max_payload_bytes":    {"100", "200"},
		"log_level":            {"debug", "error"},
		"log_format":           {"json", "text"},
		"gossip_key":           {"MDEyMzQ1Njc4OWFiY2RlZg==", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"},
		"cluster_label":        {"la", "lb"},
		"debug_addr":           {"127.0.0.1:6060", ":6061"},
		"http_allowed_hosts":   {"a.example", "b.example"},
		"http_max_connections": {"10", "20"},
		"http_base_path":       {"/a", "/b/c"},
		"http_max_feed_waits":  {"100", "300"},
		"http_tls_cert":        {"/a.crt", "/b.crt"},
		"http_tls_key":         {"/a.key", "/b.key"},
		"actor_tls_cert":       {"/a.crt", "/b.crt"},
		"actor_tls_key":        {"/a.key", "/b.key"},
		"actor_tls_ca":         {"/a-ca.crt", "/b-ca.crt"},
		"durability":           {"replicated", "async"},
		"durability_replicas":  {"2", "3"},
		"durability_timeout":   {"500ms", "2s"},
	}
	// Settings that need another to be valid, given in the environment.
	partners := map[string][]string{
		"http_tls_cert":   {"ORDERLY_HTTP_TLS_KEY=/p.key"},
		"http_tls_key":    {"ORDERLY_HTTP_TLS_CERT=/p.crt"},
		"http_read_token": {"ORDERLY_HTTP_TOKEN=full"},
		"actor_tls_cert":  {"ORDERLY_ACTOR_TLS_KEY=/p.key", "ORDERLY_ACTOR_TLS_CA=/p-ca.crt", "ORDERLY_ACTOR_ADDR=127.0.0.1:8090"},
		"actor_tls_key":   {"ORDERLY_ACTOR_TLS_CERT=/p.crt", "ORDERLY_ACTOR_TLS_CA=/p-ca.crt", "ORDERLY_ACTOR_ADDR=127.0.0.1:8090"},
		"actor_tls_ca":    {"ORDERLY_ACTOR_TLS_CERT=/p.crt", "ORDERLY_ACTOR_TLS_KEY=/p.key", "ORDERLY_ACTOR_ADDR=127.0.0.1:8090"},
	}
	require.Len(t, settings(), len(values))
	for _, s := range settings() {
		t.Run(s.key(), func(t *testing.T) {
			v, ok := values[s.key()]
			require.True(t, ok, "no test value for %s", s.key())
			show := func(c *Config) string { return s.show(&c.Node) }
			partner := partners[s.key()]

			yamlValue := fmt.Sprintf("%q", v[0])
			switch s.typeName() {
			case "list":
				yamlValue = "[" + yamlValue + "]"
			case "int", "": // an int or a bool
				yamlValue = v[0]
			}
			cfg, _, err := loadFile(t, fmt.Sprintf("node:\n  %s: %s\n", s.key(), yamlValue), partner)
			require.NoError(t, err)
			require.Equal(t, v[0], show(cfg), "file")

			cfg, _, err = loadFile(t, "", append([]string{envName(s.key()) + "=" + v[0]}, partner...))
			require.NoError(t, err)
			require.Equal(t, v[0], show(cfg), "env")

			cfg, _, err = loadFile(t, "", append([]string{envName(s.key()) + "=" + v[0]}, partner...), "--"+flagName(s.key())+"="+v[1])
			require.NoError(t, err)
			require.Equal(t, v[1], show(cfg), "flag")
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		var out strings.Builder
		cfg, err := Load([]string{"--bind", "x", arg}, []string{"ORDERLY_CONCURRENCY=bad"}, &out)
		require.ErrorIs(t, err, flag.ErrHelp)
		require.Nil(t, cfg)
		usage := out.String()
		require.Contains(t, usage, "--config string")
		require.Contains(t, usage, "ORDERLY_CONFIG")
		for _, s := range settings() {
			require.Contains(t, usage, "--"+flagName(s.key()), s.key())
			require.Contains(t, usage, "env "+envName(s.key())+")", s.key())
		}
		for _, def := range []string{
			"default 127.0.0.1:7946;", "default 127.0.0.1:8080;", "default 5;", "default lag;",
			"default 3s;", "default 25s;", "default 30s;", "default 4320h;", "default 1048576;",
			"default info;", "default text;", "default orderly;", "default false;", "default the host name;", "default none; env ORDERLY_CONFIG",
			"default empty; env ORDERLY_REDIS",
		} {
			require.Contains(t, usage, def)
		}
		require.Contains(t, usage, "overrides its\nenvironment variable, which overrides the file")
		require.Contains(t, usage, `one queue "default"`)
	}
}

func TestRedacted(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, `node:
  http_token: tok-SECRET
  http_read_token: rtok-SECRET
  gossip_key: U0VDUkVUU0VDUkVUU0VDUg==
  actor_token: atok-SECRET
  redis: redis://alice:redis-SECRET@db.example:6379/3
  join: [a:1]
queues:
  - name: q
    handler: {type: http, url: 'https://bob:hook-SECRET@hooks.example/perform?x=1', secret: sig-SECRET, headers: {Authorization: Bearer hdr-SECRET}}
`, nil)
	require.NoError(t, err)
	before := fmt.Sprintf("%+v", *cfg)

	r := cfg.Redacted()
	shown := fmt.Sprintf("%+v", *r)
	for _, secret := range []string{"tok-SECRET", "rtok-SECRET", "U0VDUkVUU0VDUkVUU0VDUg==", "atok-SECRET", "redis-SECRET", "hook-SECRET", "sig-SECRET", "hdr-SECRET"} {
		require.Contains(t, before, secret)
		require.NotContains(t, shown, secret)
	}
	require.Equal(t, "REDACTED", r.Node.HTTPToken)
	require.Equal(t, "REDACTED", r.Node.HTTPReadToken)
	require.Equal(t, "REDACTED", r.Node.GossipKey)
	require.Equal(t, "REDACTED", r.Node.ActorToken)
	require.Equal(t, "redis://alice:REDACTED@db.example:6379/3", r.Node.Redis)
	for raw, want := range map[string]string{
		"redis+sentinel://:pw@s1,s2:26380/m?sentinel_password=spw": "redis+sentinel://:REDACTED@s1,s2:26380/m?sentinel_password=REDACTED",
		"redis+cluster://u:pw@a:1,b":                               "redis+cluster://u:REDACTED@a:1,b",
	} {
		c := &Config{Node: NodeConfig{Redis: raw}}
		require.Equal(t, want, c.Redacted().Node.Redis)
	}
	require.Equal(t, "https://bob:REDACTED@hooks.example/perform?x=1", r.Queues[0].Handler.URL)
	require.Equal(t, "REDACTED", r.Queues[0].Handler.Secret)
	require.Equal(t, map[string]string{"Authorization": "REDACTED"}, r.Queues[0].Handler.Headers)
	// The rest is kept.
	require.Equal(t, cfg.Node.Name, r.Node.Name)
	require.Equal(t, cfg.Node.Join, r.Node.Join)
	require.Equal(t, cfg.Queues[0].Name, r.Queues[0].Name)

	// It is a copy.
	r.Node.Join[0] = "changed"
	r.Queues[0].Name = "changed"
	r.Queues[0].Handler.Headers["Authorization"] = "changed"
	require.Equal(t, before, fmt.Sprintf("%+v", *cfg))

	// Empty secrets stay empty, URLs without a password are kept.
	d := defaults()
	d.Node.Redis = "redis://db.example:6379/0"
	r = d.Redacted()
	require.Empty(t, r.Node.HTTPToken)
	require.Empty(t, r.Node.GossipKey)
	require.Equal(t, "redis://db.example:6379/0", r.Node.Redis)
	require.Equal(t, "REDACTED", redactURL("%zz://a:b@c")) // unparseable: all of it
}

// max_retry_count has the meaning of orderly.Worker's MaxRetryCount: the
// default when absent, NoRetries for -1 or none; 0 is refused in a file
// (errors_test.go), and means the default in a Config built in code.
func TestMaxRetryCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml string
		want int
	}{
		{"", DefaultMaxRetryCount},
		{"max_retry_count: 5", 5},
		{"max_retry_count: 1", 1},
		{"max_retry_count: -1", NoRetries},
		{"max_retry_count: none", NoRetries},
		{"max_retry_count: ~", DefaultMaxRetryCount},
	} {
		file := "queues:\n  - name: a\n"
		if tc.yaml != "" {
			file += "    " + tc.yaml + "\n"
		}
		cfg, _, err := loadFile(t, file, nil)
		require.NoError(t, err, tc.yaml)
		require.Equal(t, tc.want, cfg.Queues[0].MaxRetryCount, tc.yaml)
	}
	c := defaults()
	c.Queues[0].MaxRetryCount = 0 // in code: the default
	require.NoError(t, c.Validate())
	c.Queues[0].MaxRetryCount = NoRetries
	require.NoError(t, c.Validate())
	c.Queues[0].MaxRetryCount = -2
	require.ErrorContains(t, c.Validate(), "queues[0].max_retry_count: must be 1 or more, -1 (NoRetries) for no retries, or 0 for the default, got -2")
}
