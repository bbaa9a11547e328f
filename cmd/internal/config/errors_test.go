package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireProblems checks that err wraps ErrInvalid and lists exactly the
// problems want, in order, each after its prefix.
func requireProblems(t *testing.T, err error, prefix string, want ...string) {
	t.Helper()
	require.ErrorIs(t, err, ErrInvalid)
	var ie *invalidError
	require.ErrorAs(t, err, &ie)
	var got []string
	for _, p := range ie.problems {
		got = append(got, p.Error())
	}
	for i := range want {
		want[i] = prefix + want[i]
	}
	require.Equal(t, want, got)
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 129)
	for _, tc := range []struct {
		name, file string
		want       []string // after "config file PATH: "
	}{
		// The shape of the file.
		{"unknown node key", exampleFile[:strings.Index(exampleFile, "  concurrency")] + "  concurency: 5\n",
			[]string{"unknown key node.concurency (line 8); did you mean node.concurrency?"}},
		{"unknown top key", "nodes: {}\nbind: a:1\nfoo: 1",
			[]string{"unknown key nodes (line 1); did you mean node?", "unknown key bind (line 2); did you mean node.bind?", "unknown key foo (line 3)"}},
		{"unknown queue keys", "queues:\n- name: a\n  shard: 1\n  retry: {policy: linear, bse: 1s, base: 1s}\n  handler: {kind: log}",
			[]string{
				"unknown key queues[0].shard (line 3); did you mean queues[0].shards?",
				"unknown key queues[0].retry.bse (line 4); did you mean queues[0].retry.base?",
				"unknown key queues[0].handler.kind (line 5)",
			}},
		{"odd key", "\"a b\": 1\n? [x]\n: 1\n<<: {node: {}}",
			[]string{`unknown key "a b" (line 1)`, "the top level has a key that is not a string (line 2)", "merge keys (<<) are not supported, in the top level (line 4)"}},
		{"repeated key", "node:\n  bind: a:1\n  bind: b:2", []string{"node.bind: given twice (first at line 2) (line 3)"}},
		{"top level not a mapping", "- a\n- b", []string{"the top level must be a mapping with keys node, queues, periodic, not a list (line 1)"}},
		{"node not a mapping", "node: [a]", []string{"node must be a mapping, not a list (line 1)"}},
		{"queues not a list", "queues: {name: a}", []string{"queues: must be a list of queues, not a mapping (line 1)"}},
		{"queue not a mapping", "queues: [a, ~]", []string{
			"queues[0] must be a mapping, not a single value (line 1)",
			"queues[1] must be a mapping, not a null (line 1)",
		}},
		{"retry not a mapping", "queues: [{name: a, retry: linear}]",
			[]string{"queues[0].retry must be a mapping with keys policy, base, max, not a single value (line 1)"}},
		{"syntax error", "node:\n  name: [\n", []string{"did not find expected node content (line 2)"}},
		{"syntax error on line 1", "node: {name: 'x}", []string{"found unexpected end of stream (line 1)"}},
		{"tab", "node:\n\tname: x", []string{"found character that cannot start any token (line 2)"}},
		{"unknown anchor", "node: *x", []string{"unknown anchor 'x' referenced"}},
		{"not UTF-8", "node:\n  name: \xff\n", []string{"not valid UTF-8 text (line 2)"}},
		{"UTF-16", "\xff\xfen\x00", []string{"not valid UTF-8 text (line 1)"}},
		{"control character", "node:\n\n  name: a\x07", []string{"control character U+0007 is not allowed (line 3)"}},
		{"two documents", "node: {}\n---\nnode: {}", []string{"more than one YAML document (line 2)"}},

		// Node values.
		{"name empty", "node: {name: ''}", []string{"node.name: must not be empty (line 1)"}},
		{"name with space", "node: {name: a b}", []string{`node.name: "a b": must not contain spaces or control characters (line 1)`}},
		{"name too long", "node: {name: " + strings.Repeat("n", 256) + "}", []string{"node.name: longer than 255 bytes (line 1)"}},
		{"bind without port", "node: {bind: localhost}", []string{`node.bind: "localhost" is not host:port (missing port in address) (line 1)`}},
		{"bind bad port", "node: {bind: 'h:99999'}", []string{`node.bind: "h:99999": the port must be a number from 0 to 65535 (line 1)`}},
		{"bind named port", "node: {bind: 'h:http'}", []string{`node.bind: "h:http": the port must be a number from 0 to 65535 (line 1)`}},
		{"http", "node: {http: '8080'}", []string{`node.http: "8080" is not host:port (missing port in address) (line 1)`}},
		{"actor_addr", "node: {actor_addr: 'a:b:c'}", []string{`node.actor_addr: "a:b:c" is not host:port (too many colons in address) (line 1)`}},
		{"join", "node:\n  join: ['h:1', ':2', 'h:0', 'h']",
			[]string{`node.join: ":2" has no host; "h:0": the port must not be 0; "h" is not host:port (missing port in address) (line 2)`}},
		{"join srv", "node:\n  join: ['dns+srv:', 'dns+srv:h:1', 'dns+srv:ok.ns.svc']",
			[]string{`node.join: "dns+srv:": dns+srv: must be followed by a DNS name; "dns+srv:h:1": dns+srv: must be followed by a DNS name (line 2)`}},
		{"join not a list", "node: {join: 'h:1'}", []string{"node.join: must be a list such as [a, b], not a single value (line 1)"}},
		{"join of lists", "node: {join: [[a]]}", []string{"node.join: item 1 must be a single value, not a list (line 1)"}},
		{"redis scheme", "node: {redis: 'http://h:1'}",
			[]string{`node.redis: scheme "http" is not one of redis, rediss, unix, redis+cluster, rediss+cluster, redis+sentinel, rediss+sentinel: write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master (line 1)`}},
		{"redis host:port", "node: {redis: '127.0.0.1:6379'}",
			[]string{"node.redis: has no scheme: write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master (line 1)"}},
		{"redis no host", "node: {redis: 'redis:///0'}",
			[]string{"node.redis: has no host: write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master (line 1)"}},
		{"redis db", "node: {redis: 'redis://h/x'}", []string{"node.redis: the path must be a database number such as /0 (line 1)"}},
		{"redis port", "node: {redis: 'redis://h:70000'}", []string{"node.redis: the port must be a number from 1 to 65535 (line 1)"}},
		{"durability mode", "node: {durability: sync}", []string{`node.durability: "sync" is not one of async, replicated (line 1)`}},
		{"durability timeout", "node: {durability_timeout: 5s}", []string{"node.durability_timeout: must be between 1ms and 2s (line 1)"}},
		{"redis unknown parameter", "node: {redis: 'redis://h:1/0?pool_sise=3'}", []string{"node.redis: unknown parameter pool_sise (line 1)"}},
		{"sentinel without master", "node: {redis: 'redis+sentinel://h:1'}",
			[]string{"node.redis: a Sentinel URL names the master after the hosts, /<master>[/db]: write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master (line 1)"}},
		{"unix no path", "node: {redis: 'unix://'}",
			[]string{"node.redis: has no socket path: write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master (line 1)"}},
		{"redis_prefix empty", "node: {redis_prefix: ''}", []string{"node.redis_prefix: must not be empty (line 1)"}},
		{"redis_prefix chars", "node: {redis_prefix: '{x}'}", []string{`node.redis_prefix: "{x}": only letters, digits, '_', '-', '.' and ':' are allowed (line 1)`}},
		{"allow_eviction", "node: {allow_eviction: maybe}", []string{`node.allow_eviction: "maybe" is not a boolean (true or false) (line 1)`}},
		{"concurrency 0", "node: {concurrency: 0}", []string{"node.concurrency: must be between 1 and 10000, got 0 (line 1)"}},
		{"concurrency too big", "node: {concurrency: 10001}", []string{"node.concurrency: must be between 1 and 10000, got 10001 (line 1)"}},
		{"concurrency text", "node: {concurrency: five}", []string{`node.concurrency: "five" is not an integer (line 1)`}},
		{"concurrency float", "node: {concurrency: 1.5}", []string{`node.concurrency: "1.5" is not an integer (line 1)`}},
		{"concurrency quoted", "node: {concurrency: '5'}", []string{`node.concurrency: "5" is not an integer (line 1)`}},
		{"concurrency list", "node: {concurrency: [5]}", []string{"node.concurrency: must be a single value, not a list (line 1)"}},
		{"scheduler", "node:\n  scheduler: fast", []string{`node.scheduler: "fast" is not one of lag, seq, weighted, strict (line 2)`}},
		{"lease_ttl short", "node: {lease_ttl: 100ms}", []string{"node.lease_ttl: must be at least 300ms, got 100ms (line 1)"}},
		{"lease_ttl bare number", "node: {lease_ttl: 3}", []string{`node.lease_ttl: 3 is not a duration: give it a unit, such as "3s" (line 1)`}},
		{"lease_ttl quoted number", "node: {lease_ttl: '3'}", []string{`node.lease_ttl: 3 is not a duration: give it a unit, such as "3s" (line 1)`}},
		{"lease_ttl float", "node: {lease_ttl: 1.5}", []string{`node.lease_ttl: 1.5 is not a duration: give it a unit, such as "1.5s" (line 1)`}},
		{"lease_ttl text", "node: {lease_ttl: soon}", []string{`node.lease_ttl: "soon" is not a duration such as "3s" or "1m30s" (line 1)`}},
		{"shutdown_timeout", "node: {shutdown_timeout: 0s}", []string{"node.shutdown_timeout: must be positive, got 0s (line 1)"}},
		{"handoff_timeout", "node: {handoff_timeout: -1s}", []string{"node.handoff_timeout: must be positive, got -1s (line 1)"}},
		{"morgue_ttl", "node: {morgue_ttl: 0s}", []string{"node.morgue_ttl: must be positive, got 0s (line 1)"}},
		{"max_payload_bytes", "node: {max_payload_bytes: 0}", []string{"node.max_payload_bytes: must be between 1 and 536870912, got 0 (line 1)"}},
		{"log_level", "node: {log_level: verbose}", []string{`node.log_level: "verbose" is not one of debug, info, warn, error (line 1)`}},
		{"log_format", "node: {log_format: xml}", []string{`node.log_format: "xml" is not one of text, json (line 1)`}},
		{"gossip_key base64", "node: {gossip_key: 'not base64!'}",
			[]string{"node.gossip_key: not valid base64 (generate a key with: openssl rand -base64 32) (line 1)"}},
		{"gossip_key length", "node: {gossip_key: 'c2hvcnQ='}", []string{"node.gossip_key: decodes to 5 bytes; an AES key has 16, 24 or 32 (line 1)"}},
		{"http_token", "node: {http_token: 'a b'}", []string{"node.http_token: must not contain spaces or control characters (line 1)"}},
		{"cluster_label", "node: {cluster_label: " + strings.Repeat("l", 256) + "}", []string{"node.cluster_label: longer than 255 bytes (line 1)"}},

		// Queue values.
		{"queue name missing", "queues:\n- shards: 1", []string{"queues[0].name: required (line 2)"}},
		{"queue name empty", "queues:\n- name: ''", []string{"queues[0].name: required (line 2)"}},
		{"queue name chars", "queues: [{name: _a}, {name: 'a b'}, {name: 'é'}]", []string{
			`queues[0].name: "_a": only letters, digits, '_', '-' and '.' are allowed, starting with a letter or digit (line 1)`,
			`queues[1].name: "a b": only letters, digits, '_', '-' and '.' are allowed, starting with a letter or digit (line 1)`,
			`queues[2].name: "é": only letters, digits, '_', '-' and '.' are allowed, starting with a letter or digit (line 1)`,
		}},
		{"queue name long", "queues: [{name: " + long + "}]", []string{"queues[0].name: longer than 128 bytes (line 1)"}},
		{"queue name list", "queues: [{name: [a]}]", []string{"queues[0].name: must be a single value, not a list (line 1)"}},
		{"duplicate queues", "queues:\n- name: a\n- name: b\n- name: a", []string{`queues[2].name: "a" is already the name of queues[0] (line 4)`}},
		{"shards", "queues: [{name: a, shards: 0}, {name: b, shards: 4097}]", []string{
			"queues[0].shards: must be between 1 and 4096, got 0 (line 1)",
			"queues[1].shards: must be between 1 and 4096, got 4097 (line 1)",
		}},
		{"max_prefetch", "queues: [{name: a, prefetch: 20, max_prefetch: 10}, {name: b, max_prefetch: 1001}]", []string{
			"queues[0].max_prefetch: must be between prefetch (20) and 1000, got 10 (line 1)",
			"queues[1].max_prefetch: must be between prefetch (1) and 1000, got 1001 (line 1)",
		}},
		{"concurrent_calls", "queues: [{name: a, concurrent_calls: -1}, {name: b, concurrent_calls: 1001}, {name: c, concurrent_calls: 4, max_concurrency: 2}]", []string{
			"queues[0].concurrent_calls: must be between 1 and 1000, got -1 (line 1)",
			"queues[1].concurrent_calls: must be between 1 and 1000, got 1001 (line 1)",
			"queues[2].concurrent_calls: must be 1 with max_concurrency (2), which counts calls one per shard at a time, got 4 (line 1)",
		}},
		{"prefetch", "queues: [{name: a, batch_size: 10, prefetch: 5}, {name: b, prefetch: 1001}]", []string{
			"queues[0].prefetch: must be between batch_size (10) and 1000, got 5 (line 1)",
			"queues[1].prefetch: must be between batch_size (1) and 1000, got 1001 (line 1)",
		}},
		{"batch_size", "queues: [{name: a, batch_size: 0}, {name: b, batch_size: 1001}]", []string{
			"queues[0].batch_size: must be between 1 and 1000, got 0 (line 1)",
			"queues[1].batch_size: must be between 1 and 1000, got 1001 (line 1)",
		}},
		{"max_retry_count below -1", "queues: [{name: a, max_retry_count: -2}]", []string{"queues[0].max_retry_count: must be 1 or more, or -1 or none for no retries, got -2 (line 1)"}},
		{"max_retry_count not a count", "queues: [{name: a, max_retry_count: never}]", []string{`queues[0].max_retry_count: "never" is not an integer: give a count, or -1 or none for no retries (line 1)`}},
		// 0 used to mean no retries; it would now mean the default, so it
		// is refused rather than silently changing an old file's meaning.
		{"max_retry_count 0", "queues:\n  - name: a\n    max_retry_count: 0\n", []string{"queues[0].max_retry_count: " + MaxRetryZero + " (line 3)"}},
		{"timeout", "queues: [{name: a, timeout: -1s}]", []string{"queues[0].timeout: must not be negative (0 means the default, 30s), got -1s (line 1)"}},
		{"max_payloads_per_call", "queues: [{name: a, max_payloads_per_call: -1}, {name: b, max_payloads_per_call: 100001}]", []string{
			"queues[0].max_payloads_per_call: must be between 1 and 100000, got -1 (line 1)",
			"queues[1].max_payloads_per_call: must be between 1 and 100000, got 100001 (line 1)",
		}},
		{"retain_finished", "queues: [{name: a, retain_finished: -1s, max_finished: -2}]", []string{
			"queues[0].retain_finished: must not be negative (0: keep no finished ids), got -1s (line 1)",
			"queues[0].max_finished: must not be negative (0 means the default, 10000), got -2 (line 1)",
		}},
		{"max_state_bytes", "queues: [{name: a, state: true, max_state_bytes: -1}]", []string{
			"queues[0].max_state_bytes: must not be negative (0 means the default, 1048576), got -1 (line 1)",
		}},
		{"feed_max_len", "queues: [{name: a, state: true, feed_max_len: -1}]", []string{
			"queues[0].feed_max_len: must not be negative (0: no change feed; default 10000), got -1 (line 1)",
		}},
		{"dedup_window", "queues: [{name: a, dedup_window: -1s}]", []string{
			"queues[0].dedup_window: must not be negative (0: no deduplication), got -1s (line 1)",
		}},
		{"max_concurrency", "queues: [{name: a, max_concurrency: -1}, {name: b, max_concurrency: x}]", []string{
			"queues[0].max_concurrency: must be 0 (no limit) or positive, got -1 (line 1)",
			`queues[1].max_concurrency: "x" is not an integer (line 1)`,
		}},
		{"weight", "node: {scheduler: weighted}\nqueues: [{name: a, weight: -1}, {name: b, weight: 1001}, {name: c, weight: x}]", []string{
			"queues[0].weight: must be between 1 and 1000 (0 or none: 1), got -1 (line 2)",
			"queues[1].weight: must be between 1 and 1000 (0 or none: 1), got 1001 (line 2)",
			`queues[2].weight: "x" is not an integer (line 2)`,
		}},
		{"rate_limit", "queues: [{name: a, rate_limit: {per_second: 0}}, {name: b, rate_limit: {per_second: 5, burst: -1}}, {name: c, rate_limit: {per_second: 1, brust: 2}}]", []string{
			"queues[0].rate_limit.per_second: must be a positive number of calls a second, got 0 (line 1)",
			"queues[1].rate_limit.burst: must be 1 or more (0 or none: max(1, ceil(per_second))), got -1 (line 1)",
			"unknown key queues[2].rate_limit.brust (line 1); did you mean queues[2].rate_limit.burst?",
		}},
		{"periodic", "queues: [{name: a}]\nperiodic:\n  - {name: p, queue: b, schedule: \"@every 1s\", id: x}\n  - {name: p, queue: a, schedule: \"61 * * * *\", id: \"\"}\n  - {name: r, queue: a, schedule: \"@hourly\", id: y, paylod: 1}\n", []string{
			`periodic[0].queue: "b" is not a queue of this file (line 3)`,
			`periodic[1].name: "p" names two periodic jobs (line 4)`,
			`periodic[1].schedule: schedule "61 * * * *": end of range (61) above maximum (59): 61 (line 4)`,
			`periodic[1].id: must not be empty (line 4)`,
			"unknown key periodic[2].paylod (line 5); did you mean periodic[2].payload?",
		}},
		// The cron parser would tick once a second, or at whole seconds,
		// without a word.
		{"periodic too often", "queues: [{name: a}]\nperiodic:\n  - {name: p, queue: a, schedule: \"@every 0s\", id: x}\n  - {name: q, queue: a, schedule: \"@every 1ms\", id: x}\n  - {name: r, queue: a, schedule: \"@every -1s\", id: x}\n  - {name: s, queue: a, schedule: \"@every 2.5s\", id: x}\n", []string{
			`periodic[0].schedule: schedule "@every 0s": the period 0s is shorter than the minimum of 1s (the cron parser would tick once a second) (line 3)`,
			`periodic[1].schedule: schedule "@every 1ms": the period 1ms is shorter than the minimum of 1s (the cron parser would tick once a second) (line 4)`,
			`periodic[2].schedule: schedule "@every -1s": the period -1s is shorter than the minimum of 1s (the cron parser would tick once a second) (line 5)`,
			`periodic[3].schedule: schedule "@every 2.5s": the period 2.5s is not a whole number of seconds (the cron parser would tick every 2s) (line 6)`,
		}},
		{"timeout number", "queues: [{name: a, timeout: 30}]", []string{`queues[0].timeout: 30 is not a duration: give it a unit, such as "30s" (line 1)`}},
		{"retry policy", "queues: [{name: a, retry: {policy: fast}}]",
			[]string{`queues[0].retry.policy: "fast" is not one of lowkiq, linear, exponential (line 1)`}},
		{"linear without base", "queues:\n- name: a\n  retry:\n    policy: linear", []string{"queues[0].retry.base: required for policy linear (line 3)"}},
		{"linear zero base", "queues:\n- name: a\n  retry: {policy: linear, base: 0s}", []string{"queues[0].retry.base: required for policy linear (line 3)"}},
		{"linear negative base", "queues: [{name: a, retry: {policy: linear, base: -1s}}]", []string{"queues[0].retry.base: must be positive, got -1s (line 1)"}},
		{"exponential without max", "queues: [{name: a, retry: {policy: exponential, base: 1s}}]",
			[]string{"queues[0].retry.max: required for policy exponential (line 1)"}},
		{"exponential without anything", "queues:\n- name: a\n  retry: {policy: exponential}", []string{
			"queues[0].retry.base: required for policy exponential (line 3)",
			"queues[0].retry.max: required for policy exponential (line 3)",
		}},
		{"max below base", "queues:\n- name: a\n  retry:\n    policy: exponential\n    base: 1m\n    max: 1s",
			[]string{"queues[0].retry.max: must be at least base (1m0s), got 1s (line 6)"}},
		{"linear max below base", "queues: [{name: a, retry: {policy: linear, base: 1m, max: 1s}}]",
			[]string{"queues[0].retry.max: must be at least base (1m0s), got 1s (line 1)"}},
		{"negative max", "queues: [{name: a, retry: {policy: linear, base: 1s, max: -1s}}]",
			[]string{"queues[0].retry.max: must be positive, got -1s (line 1)"}},
		{"lowkiq with base and max", "queues: [{name: a, retry: {base: 1s, max: 1m}}]", []string{
			"queues[0].retry.base: not allowed with policy lowkiq (the default); set policy: linear or exponential (line 1)",
			"queues[0].retry.max: not allowed with policy lowkiq (the default); set policy: linear or exponential (line 1)",
		}},
		{"handler type", "queues: [{name: a, handler: {type: grpc}}]", []string{`queues[0].handler.type: "grpc" is not one of log, noop, http, pull (line 1)`}},
		{"http without url", "queues:\n- name: a\n- name: b\n  handler:\n    type: http", []string{"queues[1].handler.url: required for handler type http (line 4)"}},
		{"http relative url", "queues: [{name: a, handler: {type: http, url: /perform}}]",
			[]string{"queues[0].handler.url: must be an absolute http or https URL, such as http://127.0.0.1:9000/perform (line 1)"}},
		{"http ftp url", "queues: [{name: a, handler: {type: http, url: 'ftp://h/p'}}]",
			[]string{"queues[0].handler.url: must be an absolute http or https URL, such as http://127.0.0.1:9000/perform (line 1)"}},
		{"http url without host", "queues: [{name: a, handler: {type: http, url: 'http:///p'}}]",
			[]string{"queues[0].handler.url: has no host (line 1)"}},
		{"http bad url", "queues: [{name: a, handler: {type: http, url: 'http://h/%zz'}}]", []string{"queues[0].handler.url: not a URL (line 1)"}},
		{"http zero timeout", "queues: [{name: a, handler: {type: http, url: 'http://h/p', timeout: 0s}}]",
			[]string{"queues[0].handler.timeout: must be positive, got 0s (line 1)"}},
		{"log with url and timeout", "queues: [{name: a, handler: {type: log, url: 'http://h/p', timeout: 1s}}]", []string{
			"queues[0].handler.url: only allowed for handler type http, not log (line 1)",
			"queues[0].handler.timeout: only allowed for handler type http, not log (line 1)",
		}},
		{"http owned headers", "queues: [{name: a, handler: {type: http, url: 'http://h/p', headers: {Orderly-Signature: x, content-type: y, Host: z, 'a b': w, X-Ok: \"v\\nw\"}}}]", []string{
			"queues[0].handler.headers: Host is set by the handler or by HTTP and cannot be configured (line 1)",
			"queues[0].handler.headers: Orderly-Signature is set by Orderly (Orderly-* headers are reserved) (line 1)",
			"queues[0].handler.headers: the value of X-Ok holds a control character (line 1)",
			"queues[0].handler.headers: \"a b\" is not a valid header name (line 1)",
			"queues[0].handler.headers: Content-Type is set by the handler or by HTTP and cannot be configured (line 1)",
		}},
		{"log with secret and headers", "queues: [{name: a, handler: {type: log, secret: s, headers: {X-A: b}}}]", []string{
			"queues[0].handler.secret: only allowed for handler type http, not log (line 1)",
			"queues[0].handler.headers: only allowed for handler type http, not log (line 1)",
		}},
		{"headers not a mapping", "queues: [{name: a, handler: {type: http, url: 'http://h/p', headers: [a]}}]",
			[]string{"queues[0].handler.headers: must be a mapping of header names to values, not a list (line 1)"}},
		{"header twice", "queues: [{name: a, handler: {type: http, url: 'http://h/p', headers: {X-A: b, x-a: c}}}]",
			[]string{"queues[0].handler.headers: the header x-a is given twice (line 1)"}},
		{"http relative retries_exhausted_url", "queues: [{name: a, handler: {type: http, url: 'http://h/p', retries_exhausted_url: /dead}}]",
			[]string{"queues[0].handler.retries_exhausted_url: must be an absolute http or https URL, such as http://127.0.0.1:9000/perform (line 1)"}},
		{"log with retries_exhausted_url", "queues: [{name: a, handler: {type: log, retries_exhausted_url: 'http://h/dead'}}]",
			[]string{"queues[0].handler.retries_exhausted_url: only allowed for handler type http, not log (line 1)"}},
		{"noop with url", "queues: [{name: a, handler: {type: noop, url: 'http://h/p'}}]",
			[]string{"queues[0].handler.url: only allowed for handler type http, not noop (line 1)"}},
		{"http client", "queues: [{name: a, handler: {type: http, url: 'http://h/p', client: curl}}]",
			[]string{`queues[0].handler.client: "curl" is not one of direct (the default), net/http (line 1)`}},
		{"log with client", "queues:\n- name: a\n  handler:\n    type: log\n    client: net/http", []string{
			"queues[0].handler.client: only allowed for handler type http, not log (line 5)",
		}},
		{"unknown signature", "queues: [{name: a, handler: {type: http, url: 'http://h/p', secret: s, signature: svix}}]",
			[]string{`queues[0].handler.signature: "svix" is not one of orderly (the default), standard (line 1)`}},
		{"standard signature without secret", "queues: [{name: a, handler: {type: http, url: 'http://h/p', signature: standard}}]",
			[]string{"queues[0].handler.secret: required with signature: standard (line 1)"}},
		{"standard signature, secret not whsec_", "queues: [{name: a, handler: {type: http, url: 'http://h/p', signature: standard, secret: s3cr3t}}]",
			[]string{"queues[0].handler.secret: with signature: standard, must be whsec_ and a base64 key (as the Standard Webhooks libraries make) (line 1)"}},
		{"standard signature, secret not base64", "queues: [{name: a, handler: {type: http, url: 'http://h/p', signature: standard, secret: 'whsec_!!'}}]",
			[]string{"queues[0].handler.secret: with signature: standard, must be whsec_ and a base64 key (as the Standard Webhooks libraries make) (line 1)"}},
		{"log with signature", "queues: [{name: a, handler: {type: log, signature: standard}}]",
			[]string{"queues[0].handler.signature: only allowed for handler type http, not log (line 1)"}},
		{"client not a string", "queues: [{name: a, handler: {type: http, url: 'http://h/p', client: [net/http]}}]",
			[]string{"queues[0].handler.client: must be a single value, not a list (line 1)"}},

		// Every problem at once, in line order.
		{"many", "queues:\n- name: a\n  shards: 0\n  handler: {type: http}\nnode:\n  concurrency: 0\n  scheduler: fast\n  lease_ttl: 1", []string{
			"queues[0].shards: must be between 1 and 4096, got 0 (line 3)",
			"queues[0].handler.url: required for handler type http (line 4)",
			"node.concurrency: must be between 1 and 10000, got 0 (line 6)",
			`node.scheduler: "fast" is not one of lag, seq, weighted, strict (line 7)`,
			`node.lease_ttl: 1 is not a duration: give it a unit, such as "1s" (line 8)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, path, err := loadFile(t, tc.file, nil)
			require.Nil(t, cfg)
			requireProblems(t, err, "config file "+path+": ", tc.want...)
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	_, path, err := loadFile(t, "queues:\n- name: a\n- handler: {type: http}\n", nil)
	require.EqualError(t, err, "config: invalid configuration (2 problems):\n"+
		"  config file "+path+": queues[1].name: required (line 3)\n"+
		"  config file "+path+": queues[1].handler.url: required for handler type http (line 3)")

	_, _, err = loadFile(t, "", []string{"ORDERLY_SCHEDULER=fast"})
	require.EqualError(t, err, `config: invalid configuration: ORDERLY_SCHEDULER: "fast" is not one of lag, seq, weighted, strict`)
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing.yaml")
	_, err := Load(nil, []string{"ORDERLY_CONFIG=" + path}, nil)
	requireProblems(t, err, "", "config file "+path+": no such file or directory")
	require.ErrorIs(t, err, fs.ErrNotExist)

	_, err = Load([]string{"--config", t.TempDir()}, nil, nil)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "is a directory")
}

func TestFileTooLarge(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(path, make([]byte, maxFileBytes+1), 0o600))
	_, err := Load([]string{"--config", path}, nil, nil)
	requireProblems(t, err, "", "config file "+path+": larger than 4 MiB")
}

func TestEnvErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want string
	}{
		{"ORDERLY_CONCURRENCY=abc", `ORDERLY_CONCURRENCY: "abc" is not an integer`},
		{"ORDERLY_CONCURRENCY=0", "ORDERLY_CONCURRENCY: must be between 1 and 10000, got 0"},
		{"ORDERLY_ALLOW_EVICTION=maybe", `ORDERLY_ALLOW_EVICTION: "maybe" is not a boolean (true or false)`},
		{"ORDERLY_LEASE_TTL=3", `ORDERLY_LEASE_TTL: 3 is not a duration: give it a unit, such as "3s"`},
		{"ORDERLY_LEASE_TTL=10ms", "ORDERLY_LEASE_TTL: must be at least 300ms, got 10ms"},
		{"ORDERLY_SCHEDULER=fast", `ORDERLY_SCHEDULER: "fast" is not one of lag, seq, weighted, strict`},
		{"ORDERLY_BIND=nope", `ORDERLY_BIND: "nope" is not host:port (missing port in address)`},
		{"ORDERLY_JOIN=a:1,b", `ORDERLY_JOIN: "b" is not host:port (missing port in address)`},
		{"ORDERLY_REDIS=localhost:6379", `ORDERLY_REDIS: has no scheme: write it as redis://host:port/db, rediss://host:port/db, unix:///path/to/redis.sock, redis+cluster://host:port,host:port or redis+sentinel://host:port,host:port/master`},
		{"ORDERLY_GOSSIP_KEY=c2hvcnQ=", "ORDERLY_GOSSIP_KEY: decodes to 5 bytes; an AES key has 16, 24 or 32"},
		{"ORDERLY_MAX_PAYLOAD_BYTES=1e6", `ORDERLY_MAX_PAYLOAD_BYTES: "1e6" is not an integer`},
		{"ORDERLY_LOG_LEVEL=DEBUG", `ORDERLY_LOG_LEVEL: "DEBUG" is not one of debug, info, warn, error`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			_, _, err := loadFile(t, "", []string{tc.env})
			requireProblems(t, err, "", tc.want)
		})
	}
}

func TestEnvWarnings(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "", []string{
		"PATH=/bin",
		"ORDERLY_CONCURENCY=5",
		"ORDERLY_FOO=",
		"ORDERLY_REQUIRE_REDIS=1", // the test tooling's
		"ORDERLY_REDIS_SERVER=/usr/bin/redis-server",
		"ORDERLY_MODEL_SEED=42",
		"ORDERLY_HTTP_TOKEN=tok",
		"ORDERLY_HTTP_TOKEN=second", // the first counts, as with os.Getenv
		"orderly_name=lower",        // not ours
		"ORDERLY_BROKEN",            // no '='
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		"unknown environment variable ORDERLY_CONCURENCY is ignored; did you mean ORDERLY_CONCURRENCY?",
		"unknown environment variable ORDERLY_FOO is ignored",
	}, cfg.Warnings)
	require.Equal(t, "tok", cfg.Node.HTTPToken)
	require.Equal(t, testHost, cfg.Node.Name)
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--concurrency", "abc"}, []string{`flag --concurrency: "abc" is not an integer`}},
		{[]string{"-concurrency=0"}, []string{"flag --concurrency: must be between 1 and 10000, got 0"}},
		{[]string{"--lease-ttl=3"}, []string{`flag --lease-ttl: 3 is not a duration: give it a unit, such as "3s"`}},
		{[]string{"--allow-eviction=maybe"}, []string{`flag --allow-eviction: "maybe" is not a boolean (true or false)`}},
		{[]string{"--name="}, []string{"flag --name: must not be empty"}},
		{[]string{"--log-format", "xml", "--scheduler", "fast"}, []string{
			`flag --log-format: "xml" is not one of text, json`, // in the order of the flags' names
			`flag --scheduler: "fast" is not one of lag, seq, weighted, strict`,
		}},
		{[]string{"--nope"}, []string{"unknown flag --nope; did you mean --name? (see --help)"}},
		{[]string{"--concurency", "5"}, []string{"unknown flag --concurency; did you mean --concurrency? (see --help)"}},
		{[]string{"-shutdown", "5s"}, []string{"unknown flag --shutdown; did you mean --shutdown-timeout? (see --help)"}},
		{[]string{"--frobnicate"}, []string{"unknown flag --frobnicate (see --help)"}},
		{[]string{"--bind"}, []string{"flag --bind needs a value (see --help)"}},
		{[]string{"--bind", "h:1", "extra"}, []string{`unexpected argument "extra": settings are given as flags such as --name n1 (see --help)`}},
		{[]string{"--allow-eviction", "false"}, []string{`unexpected argument "false": settings are given as flags such as --name n1 (see --help)`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := loadFile(t, "", nil, tc.args...)
			requireProblems(t, err, "", tc.want...)
		})
	}
}

func TestBoolFlag(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "node: {allow_eviction: false}", nil, "--allow-eviction")
	require.NoError(t, err)
	require.True(t, cfg.Node.AllowEviction)
}

func TestEverySourceReported(t *testing.T) {
	t.Parallel()
	// A bad value is an error even where a later source overrides it.
	_, path, err := loadFile(t, "node: {concurrency: 0}", []string{"ORDERLY_CONCURRENCY=x"}, "--concurrency=5", "--lease-ttl=1")
	requireProblems(t, err, "",
		"config file "+path+": node.concurrency: must be between 1 and 10000, got 0 (line 1)",
		`ORDERLY_CONCURRENCY: "x" is not an integer`,
		`flag --lease-ttl: 1 is not a duration: give it a unit, such as "1s"`,
	)
}

func TestSecretsNotInErrors(t *testing.T) {
	t.Parallel()
	_, _, err := loadFile(t, `node:
  http_token: "tok SECRET1"
  gossip_key: "SECRET2!"
  redis: "redis://u:SECRET3@h/notadb"
queues:
  - name: a
    handler: {type: http, url: "ftp://u:SECRET4@h/p"}
`, []string{"ORDERLY_REDIS=http://u:SECRET5@h"}, "--http-token=SECRET6 x", "--gossip-key=SECRET7")
	require.ErrorIs(t, err, ErrInvalid)
	for _, secret := range []string{"SECRET1", "SECRET2", "SECRET3", "SECRET4", "SECRET5", "SECRET6", "SECRET7"} {
		require.NotContains(t, err.Error(), secret)
	}
	require.Equal(t, 7, strings.Count(err.Error(), "\n  "), err.Error())
}

func TestHostnameUnknown(t *testing.T) {
	t.Parallel()
	l := loader{readFile: readFile, hostname: func() (string, error) { return "", errors.New("no uts") }}
	_, err := l.load(nil, nil, nil)
	requireProblems(t, err, "", "node.name: not set, and the host name is unknown (no uts): set node.name, ORDERLY_NAME or --name")

	cfg, err := l.load([]string{"--name", "n1"}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "n1", cfg.Node.Name)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, defaults().Validate())

	c := defaults()
	c.Node.Concurrency = 0
	c.Node.Name = ""
	c.Queues = append(c.Queues, QueueConfig{Name: "default", Shards: 1, BatchSize: 1,
		Retry: RetryConfig{Policy: RetryExponential, Base: 1}, Handler: HandlerConfig{Type: HandlerHTTP}})
	requireProblems(t, c.Validate(), "",
		"node.name: must not be empty",
		"node.concurrency: must be between 1 and 10000, got 0",
		"queues[1].retry.max: required for policy exponential",
		"queues[1].handler.url: required for handler type http",
		"queues[1].handler.timeout: must be positive, got 0s",
		`queues[1].name: "default" is already the name of queues[0]`,
	)
}

// A queue weight needs a scheduler that reads it, wherever the scheduler
// is set.
func TestWeightNeedsItsScheduler(t *testing.T) {
	t.Parallel()
	const file = "queues: [{name: a, weight: 3}, {name: b}]\n"
	const want = "queues[0].weight: only the weighted and strict schedulers read it, and node.scheduler is lag"
	_, _, err := loadFile(t, file, nil)
	requireProblems(t, err, "", want)
	_, _, err = loadFile(t, file, []string{"ORDERLY_SCHEDULER=seq"})
	requireProblems(t, err, "", strings.Replace(want, "is lag", "is seq", 1))
	for _, sched := range []string{"weighted", "strict"} {
		cfg, _, err := loadFile(t, file, nil, "--scheduler="+sched)
		require.NoError(t, err)
		require.Equal(t, 3, cfg.Queues[0].Weight)
	}
}

// A periodic job whose payload is over max_payload_bytes, wherever the
// limit comes from, is refused: no tick could enqueue it, and the node
// would log an error at every tick.
func TestPeriodicPayloadOverLimit(t *testing.T) {
	t.Parallel()
	const file = "queues: [{name: a}]\nperiodic:\n  - {name: p, queue: a, schedule: \"@hourly\", id: x, payload: {n: \"0123456789\"}}\n  - {name: q, queue: a, schedule: \"@hourly\", id: y, payload: {n: 1}}\n"
	const want = "periodic[0].payload: 18 bytes, more than node.max_payload_bytes (17): no tick could enqueue it"
	_, _, err := loadFile(t, "node: {max_payload_bytes: 17}\n"+file, nil)
	requireProblems(t, err, "", want)
	_, _, err = loadFile(t, file, []string{"ORDERLY_MAX_PAYLOAD_BYTES=17"})
	requireProblems(t, err, "", want)
	_, _, err = loadFile(t, file, nil, "--max-payload-bytes=17")
	requireProblems(t, err, "", want)
	cfg, _, err := loadFile(t, file, nil, "--max-payload-bytes=18")
	require.NoError(t, err, "at the limit")
	require.Len(t, cfg.Periodic, 2)
}
