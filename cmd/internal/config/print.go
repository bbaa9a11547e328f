package config

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FileYAML returns c as a configuration file that Load reads back into the
// same configuration: the keys of the file (node, queues, periodic), every
// value as the file writes it (durations such as 30s, not nanoseconds),
// defaults included, so that the file shows what the node runs with.
// Settings whose value is empty or zero, which is their default, are left
// out. No secret is written: the node's tokens and gossip key become
// comments that name the key and its environment variable (a value such as
// REDACTED would be taken as the token), and the passwords in URLs, handler
// secrets and header values are replaced by REDACTED, each with a comment
// saying to set it again.
func (c *Config) FileYAML() ([]byte, error) {
	r := c.Redacted()
	doc := mapping()
	doc.add("node", c.nodeYAML(r))
	queues := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range r.Queues {
		queues.Content = append(queues.Content, queueYAML(&r.Queues[i], &c.Queues[i]).Node)
	}
	doc.add("queues", queues)
	if len(r.Periodic) > 0 {
		periodic := &yaml.Node{Kind: yaml.SequenceNode}
		for _, p := range r.Periodic {
			n, err := periodicYAML(p)
			if err != nil {
				return nil, err
			}
			periodic.Content = append(periodic.Content, n)
		}
		doc.add("periodic", periodic)
	}
	var b bytes.Buffer
	source := "flags and environment"
	if c.File != "" {
		source = c.File + ", environment and flags"
	}
	fmt.Fprintf(&b, "# The effective configuration of node %s (from %s), with every default.\n", c.Node.Name, source)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc.Node); err != nil {
		return nil, fmt.Errorf("config: write the configuration as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: write the configuration as YAML: %w", err)
	}
	return b.Bytes(), nil
}

// yamlMap builds a YAML mapping, key after key.
type yamlMap struct{ *yaml.Node }

func mapping() yamlMap { return yamlMap{&yaml.Node{Kind: yaml.MappingNode}} }

func (m yamlMap) add(key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: tagStr, Value: key}, v)
}

// addSecret adds a secret's redacted value, when there is one, with a
// comment.
func (m yamlMap) addSecret(key, redacted, original string) {
	if redacted == "" {
		return
	}
	v := str(redacted)
	if redacted != original {
		v.LineComment = "secret, not shown: set it again"
	}
	m.add(key, v)
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tagStr, Value: s} }

func integer(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tagInt, Value: strconv.Itoa(n)}
}

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func duration(d time.Duration) *yaml.Node { return str(formatDuration(d)) }

func list(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range items {
		n.Content = append(n.Content, str(s))
	}
	return n
}

// nodeSecrets are the node settings that are secrets whole: FileYAML
// leaves them out, with a comment in their place, rather than write a
// value a node would take as the secret.
var nodeSecrets = map[string]bool{"http_token": true, "http_read_token": true, "actor_token": true, "gossip_key": true}

// nodeYAML writes the node section of r (c redacted), setting by setting;
// a comment at its head names the secrets left out.
func (c *Config) nodeYAML(r *Config) *yaml.Node {
	m := mapping()
	var secrets []string
	for _, s := range settings() {
		key := s.key()
		v := s.yamlValue(&r.Node)
		if v == nil {
			continue
		}
		if nodeSecrets[key] {
			secrets = append(secrets, fmt.Sprintf("%s (%s)", key, envName(key)))
			continue
		}
		if orig := s.yamlValue(&c.Node); orig == nil || orig.Value != v.Value {
			v.LineComment = "the password is a secret, not shown: set it again"
		}
		m.add(key, v)
	}
	if len(secrets) > 0 && len(m.Content) > 0 {
		m.Content[0].HeadComment = "Secrets, not shown: set them here or in the environment:\n" + strings.Join(secrets, ", ")
	}
	return m.Node
}

// yamlValue returns n's field as the file writes it, or nil when it is
// empty or zero.
func (f field[T]) yamlValue(n *NodeConfig) *yaml.Node {
	switch v := any(*f.get(n)).(type) {
	case string:
		if v != "" {
			return str(v)
		}
	case int:
		if v != 0 {
			return integer(v)
		}
	case bool:
		if v {
			return boolean(v)
		}
	case time.Duration:
		if v != 0 {
			return duration(v)
		}
	case []string:
		if len(v) > 0 {
			return list(v)
		}
	}
	return nil
}

// queueYAML writes the queue r (the original q redacted).
func queueYAML(r, q *QueueConfig) yamlMap {
	m := mapping()
	m.add("name", str(r.Name))
	m.add("shards", integer(r.Shards))
	m.add("batch_size", integer(r.BatchSize))
	optionalInt(m, "prefetch", r.Prefetch)
	optionalInt(m, "max_prefetch", r.MaxPrefetch)
	optionalInt(m, "concurrent_calls", r.ConcurrentCalls)
	m.add("max_retry_count", integer(r.MaxRetryCount))
	optionalInt(m, "max_payloads_per_call", r.MaxPayloadsPerCall)
	if r.Timeout != 0 {
		m.add("timeout", duration(r.Timeout))
	}
	if r.DedupWindow != 0 {
		m.add("dedup_window", duration(r.DedupWindow))
	}
	retry := mapping()
	retry.add("policy", str(r.Retry.Policy))
	if r.Retry.Base != 0 {
		retry.add("base", duration(r.Retry.Base))
	}
	if r.Retry.Max != 0 {
		retry.add("max", duration(r.Retry.Max))
	}
	retry.Style = yaml.FlowStyle
	m.add("retry", retry.Node)
	m.add("handler", handlerYAML(&r.Handler, &q.Handler))
	optionalInt(m, "max_concurrency", r.MaxConcurrency)
	optionalInt(m, "weight", r.Weight)
	if r.RateLimit != nil {
		rl := mapping()
		rl.Style = yaml.FlowStyle
		rl.add("per_second", &yaml.Node{Kind: yaml.ScalarNode, Tag: tagFloat, Value: strconv.FormatFloat(r.RateLimit.PerSecond, 'g', -1, 64)})
		optionalInt(rl, "burst", r.RateLimit.Burst)
		m.add("rate_limit", rl.Node)
	}
	if r.State {
		m.add("state", boolean(true))
	}
	optionalInt(m, "max_state_bytes", r.MaxStateBytes)
	if r.FeedMaxLen != nil {
		m.add("feed_max_len", integer(*r.FeedMaxLen))
	}
	if r.RetainFinished != 0 {
		m.add("retain_finished", duration(r.RetainFinished))
	}
	optionalInt(m, "max_finished", r.MaxFinished)
	return m
}

func optionalInt(m yamlMap, key string, v int) {
	if v != 0 {
		m.add(key, integer(v))
	}
}

// handlerYAML writes the handler r (the original h redacted).
func handlerYAML(r, h *HandlerConfig) *yaml.Node {
	m := mapping()
	m.add("type", str(r.Type))
	if r.URL != "" {
		v := str(r.URL)
		if r.URL != h.URL {
			v.LineComment = "the password is a secret, not shown: set it again"
		}
		m.add("url", v)
	}
	if r.RetriesExhaustedURL != "" {
		v := str(r.RetriesExhaustedURL)
		if r.RetriesExhaustedURL != h.RetriesExhaustedURL {
			v.LineComment = "the password is a secret, not shown: set it again"
		}
		m.add("retries_exhausted_url", v)
	}
	if r.Timeout != 0 {
		m.add("timeout", duration(r.Timeout))
	}
	if r.HidePayloads {
		m.add("payloads", boolean(false))
	}
	m.addSecret("secret", r.Secret, h.Secret)
	if r.Signature != "" {
		m.add("signature", str(r.Signature))
	}
	if len(r.Headers) > 0 {
		headers := mapping()
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			headers.addSecret(k, r.Headers[k], h.Headers[k])
		}
		m.add("headers", headers.Node)
	}
	if r.Lease != 0 {
		m.add("lease", duration(r.Lease))
	}
	m.addSecret("worker_token", r.WorkerToken, h.WorkerToken)
	if r.Client != "" {
		m.add("client", str(r.Client))
	}
	return m.Node
}

// periodicYAML writes a periodic job; its payload, compact JSON, is a
// valid YAML flow value, kept as it is.
func periodicYAML(p PeriodicConfig) (*yaml.Node, error) {
	m := mapping()
	m.add("name", str(p.Name))
	m.add("queue", str(p.Queue))
	m.add("schedule", str(p.Schedule))
	m.add("id", str(p.ID))
	if len(p.Payload) > 0 {
		var doc yaml.Node
		if err := yaml.Unmarshal(p.Payload, &doc); err != nil || len(doc.Content) != 1 {
			return nil, fmt.Errorf("config: periodic job %s: its payload %s is not a YAML value: %v", p.Name, p.Payload, err)
		}
		m.add("payload", doc.Content[0])
	}
	return m.Node, nil
}
