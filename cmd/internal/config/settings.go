package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// setting is one node setting, known by the same name in every source: the
// file key under node: (lease_ttl), the environment variable
// (ORDERLY_LEASE_TTL) and the flag (--lease-ttl). Each source parses its
// text or YAML into the field, checking the value.
type setting interface {
	key() string
	help() string
	// typeName names the value's type in the usage text; empty for a bool.
	typeName() string
	// setText parses s (from the environment or a flag) into n's field.
	setText(n *NodeConfig, s string) error
	// setYAML decodes v (from the file) into n's field.
	setYAML(n *NodeConfig, v *yaml.Node) error
	// validate checks n's field.
	validate(n *NodeConfig) error
	// show formats n's field for the usage text.
	show(n *NodeConfig) string
	// yamlValue returns n's field as the file writes it, or nil when it
	// is empty or zero (print.go).
	yamlValue(n *NodeConfig) *yaml.Node
}

// field is a setting held by a NodeConfig field of type T: string, int,
// bool, time.Duration or []string.
type field[T any] struct {
	name  string
	usage string
	get   func(*NodeConfig) *T
	check func(T) error // nil: every value is valid
}

func (f field[T]) key() string  { return f.name }
func (f field[T]) help() string { return f.usage }

func (f field[T]) typeName() string {
	var v T
	switch any(v).(type) {
	case int:
		return "int"
	case bool:
		return ""
	case time.Duration:
		return "duration"
	case []string:
		return "list"
	}
	return "string"
}

func (f field[T]) setText(n *NodeConfig, s string) error {
	v, err := parseText[T](s)
	if err != nil {
		return err
	}
	return f.set(n, v)
}

func (f field[T]) setYAML(n *NodeConfig, y *yaml.Node) error {
	v, err := decodeYAML[T](y)
	if err != nil {
		return err
	}
	return f.set(n, v)
}

func (f field[T]) set(n *NodeConfig, v T) error {
	if f.check != nil {
		if err := f.check(v); err != nil {
			return err
		}
	}
	*f.get(n) = v
	return nil
}

func (f field[T]) validate(n *NodeConfig) error {
	if f.check == nil {
		return nil
	}
	return f.check(*f.get(n))
}

func (f field[T]) show(n *NodeConfig) string {
	switch v := any(*f.get(n)).(type) {
	case []string:
		return strings.Join(v, ",")
	case time.Duration:
		return formatDuration(v)
	}
	return fmt.Sprint(*f.get(n))
}

// formatDuration formats d without zero minutes and seconds: 4320h, not
// 4320h0m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// envName returns the environment variable of a setting key.
func envName(key string) string { return "ORDERLY_" + strings.ToUpper(key) }

// flagName returns the flag of a setting key, without its leading dashes.
func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// settings returns the node's settings in the order of the usage text.
func settings() []setting {
	return []setting{
		field[string]{"name", "node name, unique in the cluster",
			func(n *NodeConfig) *string { return &n.Name }, checkName},
		field[string]{"bind", "gossip listen address, host:port",
			func(n *NodeConfig) *string { return &n.Bind }, checkListenAddr},
		field[[]string]{"join", "comma-separated seeds: host:port (a DNS name stands for all its addresses) or dns+srv:name",
			func(n *NodeConfig) *[]string { return &n.Join }, checkJoin},
		field[string]{"http", "HTTP API listen address, host:port",
			func(n *NodeConfig) *string { return &n.HTTP }, checkListenAddr},
		field[string]{"http_token", "bearer token the HTTP API requires; empty: no authentication (secret)",
			func(n *NodeConfig) *string { return &n.HTTPToken }, checkToken},
		field[string]{"http_read_token", "bearer token that opens only reads: the dashboard's views, every GET and /metrics (secret; needs http_token)",
			func(n *NodeConfig) *string { return &n.HTTPReadToken }, checkToken},
		field[bool]{"http_public", "let the HTTP API listen on a non-loopback address without http_token",
			func(n *NodeConfig) *bool { return &n.HTTPPublic }, nil},
		field[[]string]{"http_allowed_hosts", "comma-separated host names a request may name (Host) without http_token, besides localhost and the node's addresses; * for any",
			func(n *NodeConfig) *[]string { return &n.HTTPAllowedHosts }, checkAllowedHosts},
		field[string]{"http_base_path", "path the HTTP API, /metrics and the dashboard answer under, such as /orderly, for a proxy that forwards a sub-path unchanged; empty: the root",
			func(n *NodeConfig) *string { return &n.HTTPBasePath }, checkBasePath},
		field[int]{"http_max_connections", "HTTP connections open at once, at most half the open-file limit",
			func(n *NodeConfig) *int { return &n.HTTPMaxConnections }, checkBetween(1, maxHTTPConnections)},
		field[int]{"http_max_feed_waits", "change-feed long polls (feed?wait=) waiting at once; one more is answered 429",
			func(n *NodeConfig) *int { return &n.HTTPMaxFeedWaits }, checkBetween(1, maxHTTPConnections)},
		field[string]{"http_tls_cert", "PEM certificate file: the HTTP API and dashboard serve HTTPS (with http_tls_key)",
			func(n *NodeConfig) *string { return &n.HTTPTLSCert }, optional(checkPath)},
		field[string]{"http_tls_key", "PEM private key file of http_tls_cert",
			func(n *NodeConfig) *string { return &n.HTTPTLSKey }, optional(checkPath)},
		field[string]{"actor_addr", "protoactor remote listen address, host:port; empty: off",
			func(n *NodeConfig) *string { return &n.ActorAddr }, optional(checkListenAddr)},
		field[string]{"actor_advertise_addr", "address other hosts reach the actor remote at, host:port; required when actor_addr binds every interface",
			func(n *NodeConfig) *string { return &n.ActorAdvertiseAddr }, optional(checkAdvertiseAddr)},
		field[string]{"actor_token", "token every client of the actor remote must present; empty: no authentication (secret)",
			func(n *NodeConfig) *string { return &n.ActorToken }, checkToken},
		field[string]{"actor_tls_cert", "PEM certificate file: the actor remote serves mutual TLS (with actor_tls_key and actor_tls_ca)",
			func(n *NodeConfig) *string { return &n.ActorTLSCert }, optional(checkPath)},
		field[string]{"actor_tls_key", "PEM private key file of actor_tls_cert",
			func(n *NodeConfig) *string { return &n.ActorTLSKey }, optional(checkPath)},
		field[string]{"actor_tls_ca", "PEM CA certificates that sign the actor remote's clients (and the remotes it dials)",
			func(n *NodeConfig) *string { return &n.ActorTLSCA }, optional(checkPath)},
		field[bool]{"actor_public", "let the actor remote listen on a non-loopback address without actor_token or actor TLS",
			func(n *NodeConfig) *bool { return &n.ActorPublic }, nil},
		field[string]{"redis", "Redis URL (redis://, rediss://, unix://, redis+cluster://, redis+sentinel://); empty: embedded in-memory store",
			func(n *NodeConfig) *string { return &n.Redis }, optional(checkRedisURL)},
		field[string]{"redis_prefix", "prefix of every Redis key",
			func(n *NodeConfig) *string { return &n.RedisPrefix }, checkRedisPrefix},
		field[bool]{"allow_eviction", "accept a Redis whose maxmemory-policy is not noeviction",
			func(n *NodeConfig) *bool { return &n.AllowEviction }, nil},
		field[string]{"durability", "when a Redis write counts as done: async (the master has it) or replicated (durability_replicas replicas have it)",
			func(n *NodeConfig) *string { return &n.Durability }, checkOneOf(DurabilityAsync, DurabilityReplicated)},
		field[int]{"durability_replicas", "replicas that must acknowledge a write in the replicated mode, 1..16",
			func(n *NodeConfig) *int { return &n.DurabilityReplicas }, checkBetween(1, 16)},
		field[time.Duration]{"durability_timeout", "how long a write waits for its replicas in the replicated mode, 1ms..2s",
			func(n *NodeConfig) *time.Duration { return &n.DurabilityTimeout }, checkDurabilityTimeout},
		field[int]{"concurrency", "batches handled at once by the node, 1..10000",
			func(n *NodeConfig) *int { return &n.Concurrency }, checkBetween(1, maxConcurrency)},
		field[string]{"scheduler", "shard scheduler: lag (oldest due job first), seq (in turn), weighted (queues share by weight) or strict (highest weight first)",
			func(n *NodeConfig) *string { return &n.Scheduler }, checkOneOf(SchedulerLag, SchedulerSeq, SchedulerWeighted, SchedulerStrict)},
		field[time.Duration]{"lease_ttl", "lifetime of a shard lease, at least 300ms",
			func(n *NodeConfig) *time.Duration { return &n.LeaseTTL }, checkAtLeast(minLeaseTTL)},
		field[time.Duration]{"shutdown_timeout", "how long a stopping node waits for its work",
			func(n *NodeConfig) *time.Duration { return &n.ShutdownTimeout }, checkPositive},
		field[time.Duration]{"handoff_timeout", "how long a shard's handoff between nodes may take",
			func(n *NodeConfig) *time.Duration { return &n.HandoffTimeout }, checkPositive},
		field[time.Duration]{"morgue_ttl", "how long a dead payload stays in the morgue (4320h: 180 days)",
			func(n *NodeConfig) *time.Duration { return &n.MorgueTTL }, checkPositive},
		field[int]{"max_payload_bytes", "largest payload accepted, in bytes",
			func(n *NodeConfig) *int { return &n.MaxPayloadBytes }, checkBetween(1, maxPayloadBytes)},
		field[string]{"log_level", "least severe level logged: debug, info, warn or error",
			func(n *NodeConfig) *string { return &n.LogLevel }, checkOneOf("debug", "info", "warn", "error")},
		field[string]{"log_format", "log format: text or json",
			func(n *NodeConfig) *string { return &n.LogFormat }, checkOneOf("text", "json")},
		field[string]{"gossip_key", "base64 of a 16, 24 or 32-byte AES key encrypting gossip; empty: plaintext (secret)",
			func(n *NodeConfig) *string { return &n.GossipKey }, optional(checkGossipKey)},
		field[bool]{"gossip_public", "let gossip listen on a non-loopback address without gossip_key",
			func(n *NodeConfig) *bool { return &n.GossipPublic }, nil},
		field[string]{"cluster_label", "label on every gossip packet, keeping clusters apart",
			func(n *NodeConfig) *string { return &n.ClusterLabel }, checkClusterLabel},
		field[string]{"debug_addr", "listen address of the debug listener (net/http/pprof, no authentication: keep it on loopback), host:port or :port for 127.0.0.1; empty: off",
			func(n *NodeConfig) *string { return &n.DebugAddr }, optional(checkListenAddr)},
	}
}

// parseText parses the text of an environment variable or a flag.
func parseText[T any](s string) (T, error) {
	var v T
	var err error
	switch p := any(&v).(type) {
	case *string:
		*p = s
	case *int:
		*p, err = strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			err = fmt.Errorf("%q is not an integer", s)
		}
	case *bool:
		*p, err = strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			err = fmt.Errorf("%q is not a boolean (true or false)", s)
		}
	case *time.Duration:
		*p, err = parseDuration(s)
	case *[]string:
		*p = splitList(s)
	default:
		panic(fmt.Sprintf("config: unsupported setting type %T", v))
	}
	return v, err
}

// parseDuration parses a Go duration string, explaining that a bare number
// needs a unit.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	return 0, errNotDuration(s)
}

// errNotDuration explains why s is not a duration, suggesting a unit if s
// is a number.
func errNotDuration(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return fmt.Errorf("%s is not a duration: give it a unit, such as %q", s, strconv.FormatFloat(f, 'f', -1, 64)+"s")
	}
	return fmt.Errorf("%q is not a duration such as \"3s\" or \"1m30s\"", s)
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// YAML tags of scalars.
const (
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagNull  = "!!null"
	tagStr   = "!!str"
)

// decodeYAML decodes a value of the file, which is not null.
func decodeYAML[T any](n *yaml.Node) (T, error) {
	n = resolveAlias(n)
	var v T
	if _, ok := any(v).([]string); !ok && n.Kind != yaml.ScalarNode {
		return v, fmt.Errorf("must be a single value, not a %s", kindName(n))
	}
	var err error
	switch p := any(&v).(type) {
	case *string:
		*p = n.Value
	case *int:
		if n.ShortTag() != tagInt || n.Decode(p) != nil {
			err = fmt.Errorf("%s is not an integer", quoteScalar(n))
		}
	case *bool:
		if n.Decode(p) != nil {
			err = fmt.Errorf("%s is not a boolean (true or false)", quoteScalar(n))
		}
	case *float64:
		if (n.ShortTag() != tagInt && n.ShortTag() != tagFloat) || n.Decode(p) != nil {
			err = fmt.Errorf("%s is not a number", quoteScalar(n))
		}
	case *time.Duration:
		*p, err = decodeDuration(n)
	case *[]string:
		*p, err = decodeList(n)
	default:
		panic(fmt.Sprintf("config: unsupported setting type %T", v))
	}
	return v, err
}

// decodeDuration decodes a scalar duration string; a YAML number is an
// error that suggests the string to write.
func decodeDuration(n *yaml.Node) (time.Duration, error) {
	switch n.ShortTag() {
	case tagInt, tagFloat:
		return 0, errNotDuration(n.Value)
	}
	return parseDuration(n.Value)
}

// decodeList decodes a sequence of strings.
func decodeList(n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("must be a list such as [a, b], not a %s", kindName(n))
	}
	var out []string
	for i, item := range n.Content {
		item = resolveAlias(item)
		if item.Kind != yaml.ScalarNode || item.ShortTag() == tagNull {
			return nil, fmt.Errorf("item %d must be a single value, not a %s", i+1, kindName(item))
		}
		out = append(out, item.Value)
	}
	return out, nil
}

// resolveAlias returns the node an alias stands for.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kindName names what a node is, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		if n.ShortTag() == tagNull {
			return "null"
		}
		return "single value"
	}
	return "YAML node"
}

// quoteScalar shows a scalar in a message, shortened if long.
func quoteScalar(n *yaml.Node) string {
	s := n.Value
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return strconv.Quote(s)
}
