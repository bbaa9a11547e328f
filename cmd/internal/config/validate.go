package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// Limits of the settings.
const (
	maxNameBytes         = 255
	maxConcurrency       = 10000
	minLeaseTTL          = 300 * time.Millisecond
	maxPayloadBytes      = 512 << 20 // Redis's largest string
	maxRedisPrefixBytes  = 64
	maxClusterLabelBytes = 255 // memberlist's limit
	maxShards            = persistence.MaxShards
	maxHTTPConnections   = 1 << 20
	maxBatchSize         = persistence.MaxBatchSize
)

// Validate checks every value of c and returns an error wrapping ErrInvalid
// that lists each problem, naming the file key (node.lease_ttl,
// queues[1].handler.url). Load validates what it returns; Validate is for
// a Config built or changed in code.
func (c *Config) Validate() error {
	var p problems
	for _, s := range settings() {
		if err := s.validate(&c.Node); err != nil {
			p.addf("node.%s: %v", s.key(), err)
		}
	}
	for i := range c.Queues {
		path := queuePath(i)
		validateQueue(&c.Queues[i], func(key, msg string) {
			p.addf("%s.%s: %s", path, key, msg)
		})
	}
	checkDuplicateQueues(c.Queues, func(i int, msg string) {
		p.addf("%s.name: %s", queuePath(i), msg)
	})
	if err := checkShardTotal(c.Queues); err != nil {
		p.addf("queues: %v", err)
	}
	checkPeriodicJobs(c, p.addf)
	if c.Node.Scheduler != SchedulerWeighted && c.Node.Scheduler != SchedulerStrict {
		for i, q := range c.Queues {
			if q.Weight != 0 {
				p.addf("%s.weight: only the weighted and strict schedulers read it, and node.scheduler is %s", queuePath(i), c.Node.Scheduler)
			}
		}
	}
	switch {
	case c.Node.HTTPReadToken != "" && c.Node.HTTPToken == "":
		p.addf("node.http_read_token: needs node.http_token (without it every request may change state)")
	case c.Node.HTTPReadToken != "" && c.Node.HTTPReadToken == c.Node.HTTPToken:
		p.addf("node.http_read_token: must differ from node.http_token")
	}
	if (c.Node.HTTPTLSCert == "") != (c.Node.HTTPTLSKey == "") {
		p.addf("node.http_tls_cert, node.http_tls_key: give both (the certificate and its key) or neither")
	}
	if set := btoi(c.Node.ActorTLSCert != "") + btoi(c.Node.ActorTLSKey != "") + btoi(c.Node.ActorTLSCA != ""); set != 0 {
		switch {
		case set != 3:
			p.addf("node.actor_tls_cert, node.actor_tls_key, node.actor_tls_ca: give all three (the certificate, its key and the CA that signs the clients) or none")
		case c.Node.ActorAddr == "":
			p.addf("node.actor_tls_cert: needs node.actor_addr (the actor remote is off)")
		}
	}
	return p.err()
}

// checkShardTotal applies the node's cap on the shards of all its queues
// (orderly.MaxNodeShards).
func checkShardTotal(qs []QueueConfig) error {
	total := 0
	for _, q := range qs {
		if q.Shards > 0 {
			total += q.Shards
		}
	}
	if total > orderly.MaxNodeShards {
		return fmt.Errorf("the %d queues have %d shards in total, more than one node can serve (at most %d): use fewer shards per queue, or fewer queues",
			len(qs), total, orderly.MaxNodeShards)
	}
	return nil
}

// checkPeriodicJobs checks what a node would refuse at every tick of a
// periodic job, once the node's settings are known: a schedule ParseCron
// refuses (the file's parse checks it with the line), and a payload over
// max_payload_bytes, which no tick could enqueue.
func checkPeriodicJobs(c *Config, addf func(format string, args ...any)) {
	limit := c.Node.MaxPayloadBytes
	if limit <= 0 {
		limit = DefaultMaxPayloadBytes
	}
	for i, pj := range c.Periodic {
		if _, err := orderly.ParseCron(pj.Schedule); err != nil {
			addf("periodic[%d].schedule: %v", i, err)
		}
		if len(pj.Payload) > limit {
			addf("periodic[%d].payload: %d bytes, more than node.max_payload_bytes (%d): no tick could enqueue it", i, len(pj.Payload), limit)
		}
	}
}

func queuePath(i int) string { return fmt.Sprintf("queues[%d]", i) }

// validateQueue checks a queue whose defaults are filled, calling report
// with each bad key (relative to the queue, e.g. "handler.url").
func validateQueue(q *QueueConfig, report func(key, msg string)) {
	if q.Name == "" {
		report("name", "required")
	} else if err := checkQueueName(q.Name); err != nil {
		report("name", err.Error())
	}
	if err := checkBetween(1, maxShards)(q.Shards); err != nil {
		report("shards", err.Error())
	}
	if err := checkBetween(1, maxBatchSize)(q.BatchSize); err != nil {
		report("batch_size", err.Error())
	}
	if q.Prefetch != 0 && (q.Prefetch < q.BatchSize || q.Prefetch > maxBatchSize) {
		report("prefetch", fmt.Sprintf("must be between batch_size (%d) and %d, got %d", q.BatchSize, maxBatchSize, q.Prefetch))
	}
	if q.MaxPrefetch != 0 && (q.MaxPrefetch < max(q.Prefetch, q.BatchSize) || q.MaxPrefetch > maxBatchSize) {
		report("max_prefetch", fmt.Sprintf("must be between prefetch (%d) and %d, got %d", max(q.Prefetch, q.BatchSize), maxBatchSize, q.MaxPrefetch))
	}
	if q.ConcurrentCalls != 0 {
		if err := checkBetween(1, maxBatchSize)(q.ConcurrentCalls); err != nil {
			report("concurrent_calls", err.Error())
		} else if q.ConcurrentCalls > 1 && q.MaxConcurrency > 0 {
			report("concurrent_calls", fmt.Sprintf("must be 1 with max_concurrency (%d), which counts calls one per shard at a time, got %d", q.MaxConcurrency, q.ConcurrentCalls))
		}
	}
	if q.MaxRetryCount < NoRetries {
		report("max_retry_count", fmt.Sprintf("must be 1 or more, -1 (NoRetries) for no retries, or 0 for the default, got %d", q.MaxRetryCount))
	}
	if q.DedupWindow < 0 {
		report("dedup_window", fmt.Sprintf("must not be negative (0: no deduplication), got %s", q.DedupWindow))
	}
	if q.Timeout < 0 {
		report("timeout", fmt.Sprintf("must not be negative (0 means the default, %s), got %s", orderly.DefaultCallTimeout, q.Timeout))
	}
	if q.MaxPayloadsPerCall != 0 {
		if err := checkBetween(1, orderly.MaxMaxPayloadsPerCall)(q.MaxPayloadsPerCall); err != nil {
			report("max_payloads_per_call", err.Error())
		}
	}
	if q.MaxStateBytes < 0 {
		report("max_state_bytes", fmt.Sprintf("must not be negative (0 means the default, %d), got %d", orderly.DefaultMaxStateBytes, q.MaxStateBytes))
	}
	if q.RetainFinished < 0 {
		report("retain_finished", fmt.Sprintf("must not be negative (0: keep no finished ids), got %s", q.RetainFinished))
	}
	if q.MaxFinished < 0 {
		report("max_finished", fmt.Sprintf("must not be negative (0 means the default, %d), got %d", persistence.DefaultMaxFinished, q.MaxFinished))
	}
	if q.FeedMaxLen != nil && *q.FeedMaxLen < 0 {
		report("feed_max_len", fmt.Sprintf("must not be negative (0: no change feed; default %d), got %d", orderly.DefaultFeedMaxLen, *q.FeedMaxLen))
	}
	if r := q.RateLimit; r != nil {
		if !(r.PerSecond > 0) || math.IsInf(r.PerSecond, 1) {
			report("rate_limit.per_second", fmt.Sprintf("must be a positive number of calls a second, got %v", r.PerSecond))
		}
		if r.Burst < 0 {
			report("rate_limit.burst", fmt.Sprintf("must be 1 or more (0 or none: max(1, ceil(per_second))), got %d", r.Burst))
		}
	}
	if q.MaxConcurrency < 0 {
		report("max_concurrency", fmt.Sprintf("must be 0 (no limit) or positive, got %d", q.MaxConcurrency))
	}
	if q.Weight < 0 || q.Weight > orderly.MaxWeight {
		report("weight", fmt.Sprintf("must be between 1 and %d (0 or none: 1), got %d", orderly.MaxWeight, q.Weight))
	}
	validateRetry(q.Retry, report)
	validateHandler(q.Handler, report)
	if q.Handler.Type == HandlerPull && q.Timeout > 0 && q.Handler.Lease > q.Timeout/2 {
		report("handler.lease", fmt.Sprintf("must be at most half the queue's timeout (%s), got %s: an unpulled batch goes back one lease before its deadline", q.Timeout, q.Handler.Lease))
	}
}

func validateRetry(r RetryConfig, report func(key, msg string)) {
	switch r.Policy {
	case RetryLowkiq:
		if r.Base != 0 {
			report("retry.base", "not allowed with policy lowkiq (the default); set policy: linear or exponential")
		}
		if r.Max != 0 {
			report("retry.max", "not allowed with policy lowkiq (the default); set policy: linear or exponential")
		}
		return
	case RetryLinear, RetryExponential:
	default:
		report("retry.policy", fmt.Sprintf("%q is not one of lowkiq, linear, exponential", r.Policy))
		return
	}
	switch {
	case r.Base == 0:
		report("retry.base", "required for policy "+r.Policy)
	case r.Base < 0:
		report("retry.base", fmt.Sprintf("must be positive, got %s", r.Base))
	}
	switch {
	case r.Max == 0 && r.Policy == RetryExponential:
		report("retry.max", "required for policy exponential")
	case r.Max < 0:
		report("retry.max", fmt.Sprintf("must be positive, got %s", r.Max))
	case r.Max > 0 && r.Max < r.Base:
		report("retry.max", fmt.Sprintf("must be at least base (%s), got %s", r.Base, r.Max))
	}
}

// checkSignature checks an http handler's signature scheme, and its secret
// for the standard one: "whsec_" and a base64 key. The secret is not
// quoted.
func checkSignature(h HandlerConfig, report func(key, msg string)) {
	switch h.Signature {
	case "", SignatureOrderly:
	case SignatureStandard:
		if h.Secret == "" {
			report("handler.secret", "required with signature: standard")
		} else if _, err := wire.StandardKey(h.Secret); err != nil || !strings.HasPrefix(h.Secret, wire.StandardSecretPrefix) {
			report("handler.secret", "with signature: standard, must be whsec_ and a base64 key (as the Standard Webhooks libraries make)")
		}
	default:
		report("handler.signature", fmt.Sprintf("%q is not one of %s (the default), %s", h.Signature, SignatureOrderly, SignatureStandard))
	}
}

// checkSender checks the settings of a queue's webhook sender: its
// headers, signature and HTTP client.
func checkSender(h HandlerConfig, report func(key, msg string)) {
	checkHandlerHeaders(h.Headers, report)
	checkSignature(h, report)
	switch h.Client {
	case "", HTTPClientDirect, HTTPClientNetHTTP:
	default:
		report("handler.client", fmt.Sprintf("%q is not one of %s (the default), %s", h.Client, HTTPClientDirect, HTTPClientNetHTTP))
	}
}

// checkPullReports checks a pull queue's retries_exhausted_url and the
// settings of its reports (secret, signature, headers, client), which a
// pull queue takes only with that URL: nothing else of it is posted.
func checkPullReports(h HandlerConfig, report func(key, msg string)) {
	if h.RetriesExhaustedURL != "" {
		if err := checkHandlerURL(h.RetriesExhaustedURL); err != nil {
			report("handler.retries_exhausted_url", err.Error())
		}
		checkSender(h, report)
		return
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"handler.secret", h.Secret != ""}, {"handler.signature", h.Signature != ""},
		{"handler.headers", len(h.Headers) > 0}, {"handler.client", h.Client != ""}} {
		if k.set {
			report(k.key, "for handler type pull, only with handler.retries_exhausted_url (it signs and shapes the reports posted there)")
		}
	}
}

func validateHandler(h HandlerConfig, report func(key, msg string)) {
	switch h.Type {
	case HandlerHTTP:
		if h.Lease != 0 || h.WorkerToken != "" {
			report("handler.lease", "lease and worker_token are only allowed for handler type pull, not http")
		}
		if h.HidePayloads {
			report("handler.payloads", "only allowed for handler type log, not http")
		}
		if h.URL == "" {
			report("handler.url", "required for handler type http")
		} else if err := checkHandlerURL(h.URL); err != nil {
			report("handler.url", err.Error())
		}
		if h.RetriesExhaustedURL != "" {
			if err := checkHandlerURL(h.RetriesExhaustedURL); err != nil {
				report("handler.retries_exhausted_url", err.Error())
			}
		}
		if h.Timeout <= 0 {
			report("handler.timeout", fmt.Sprintf("must be positive, got %s", h.Timeout))
		}
		checkSender(h, report)
	case HandlerPull:
		for _, k := range []struct {
			key string
			set bool
		}{{"handler.url", h.URL != ""}, {"handler.timeout", h.Timeout != 0}, {"handler.payloads", h.HidePayloads}} {
			if k.set {
				report(k.key, "not allowed for handler type pull (its bound is the queue's timeout)")
			}
		}
		checkPullReports(h, report)
		if h.Lease < 0 {
			report("handler.lease", fmt.Sprintf("must be positive, got %s", h.Lease))
		}
	case HandlerLog, HandlerNoop:
		if h.Lease != 0 {
			report("handler.lease", "only allowed for handler type pull, not "+h.Type)
		}
		if h.WorkerToken != "" {
			report("handler.worker_token", "only allowed for handler type pull, not "+h.Type)
		}
		if h.URL != "" {
			report("handler.url", "only allowed for handler type http, not "+h.Type)
		}
		if h.RetriesExhaustedURL != "" {
			report("handler.retries_exhausted_url", "only allowed for handler type http, not "+h.Type)
		}
		if h.Timeout != 0 {
			report("handler.timeout", "only allowed for handler type http, not "+h.Type)
		}
		if h.HidePayloads && h.Type != HandlerLog {
			report("handler.payloads", "only allowed for handler type log, not "+h.Type)
		}
		if h.Secret != "" {
			report("handler.secret", "only allowed for handler type http, not "+h.Type)
		}
		if h.Signature != "" {
			report("handler.signature", "only allowed for handler type http, not "+h.Type)
		}
		if len(h.Headers) > 0 {
			report("handler.headers", "only allowed for handler type http, not "+h.Type)
		}
		if h.Client != "" {
			report("handler.client", "only allowed for handler type http, not "+h.Type)
		}
	default:
		report("handler.type", fmt.Sprintf("%q is not one of log, noop, http, pull", h.Type))
	}
}

// checkDuplicateQueues calls report for each queue whose name an earlier
// queue has.
func checkDuplicateQueues(qs []QueueConfig, report func(i int, msg string)) {
	first := make(map[string]int, len(qs))
	for i, q := range qs {
		if q.Name == "" {
			continue
		}
		if j, dup := first[q.Name]; dup {
			report(i, fmt.Sprintf("%q is already the name of %s", q.Name, queuePath(j)))
			continue
		}
		first[q.Name] = i
	}
}

// checkQueueName applies the store's rule (persistence.ValidateQueueName),
// without repeating the key the caller already names.
func checkQueueName(name string) error {
	var fe *persistence.FieldError
	if err := persistence.ValidateQueueName(name); errors.As(err, &fe) {
		return errors.New(fe.Reason)
	} else if err != nil {
		return err
	}
	return nil
}

func checkName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("must not be empty")
	case len(s) > maxNameBytes:
		return fmt.Errorf("longer than %d bytes", maxNameBytes)
	case hasSpaceOrControl(s):
		return fmt.Errorf("%q: must not contain spaces or control characters", s)
	}
	return nil
}

// hasSpaceOrControl reports whether s has white space, a control character
// or invalid UTF-8.
func hasSpaceOrControl(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	})
}

// checkListenAddr checks a listen address: host:port, where the host may be
// empty (every interface) and the port 0 (any free port).
func checkListenAddr(s string) error { return checkHostPort(s, false) }

// checkAdvertiseAddr checks an address others dial: a concrete host (not
// a wildcard) and a port other than 0.
func checkAdvertiseAddr(s string) error {
	if err := checkHostPort(s, true); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(s)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%s binds every interface: give the address other hosts reach this node at", s)
	}
	if port == "0" {
		return fmt.Errorf("%s: the port must not be 0", s)
	}
	return nil
}

// checkJoin checks the seeds: each a host:port with a host and a port, or
// dns+srv: and a DNS name (cluster.SRVPrefix).
func checkJoin(seeds []string) error {
	var bad []string
	for _, s := range seeds {
		if strings.HasPrefix(s, cluster.SRVPrefix) {
			if err := cluster.CheckSeed(s); err != nil {
				bad = append(bad, err.Error())
			}
			continue
		}
		if err := checkHostPort(s, true); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if bad != nil {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

func checkHostPort(s string, dial bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		msg := err.Error()
		if ae, ok := err.(*net.AddrError); ok {
			msg = ae.Err
		}
		return fmt.Errorf("%q is not host:port (%s)", s, msg)
	}
	if hasSpaceOrControl(host) {
		return fmt.Errorf("%q: the host must not contain spaces or control characters", s)
	}
	if dial && host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", s)
	}
	if dial && n == 0 {
		return fmt.Errorf("%q: the port must not be 0", s)
	}
	return nil
}

// checkAllowedHosts checks the allowed Host names: each a host name or an
// address, without port, or "*".
func checkAllowedHosts(hosts []string) error {
	var bad []string
	for _, h := range hosts {
		if h == "*" || net.ParseIP(strings.Trim(h, "[]")) != nil {
			continue
		}
		if h == "" || len(h) > 253 || strings.ContainsFunc(h, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._", r))
		}) {
			bad = append(bad, fmt.Sprintf("%q is not a host name or address (give names without port or scheme)", h))
		}
	}
	if bad != nil {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// checkBasePath checks http_base_path as web.ValidateBasePath does (a
// test keeps them in step; this package does not link the HTTP server):
// empty, or '/' and segments of letters, digits, '-', '.', '_' and '~',
// without a trailing slash.
func checkBasePath(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must start with '/', as in /orderly", p)
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q must not end with '/': write /orderly, or nothing to serve at the root", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q has an empty, '.' or '..' segment", p)
		}
		if strings.ContainsFunc(seg, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r))
		}) {
			return fmt.Errorf("%q: only letters, digits, '-', '.', '_', '~' and '/' between segments are allowed", p)
		}
	}
	return nil
}

// checkPath checks a file path; the file is read when the node starts.
func checkPath(s string) error {
	if strings.ContainsFunc(s, unicode.IsControl) || !utf8.ValidString(s) {
		return fmt.Errorf("%q: a path must not contain control characters", s)
	}
	return nil
}

// checkToken checks the HTTP bearer token without showing it.
func checkToken(s string) error {
	if hasSpaceOrControl(s) {
		return fmt.Errorf("must not contain spaces or control characters")
	}
	return nil
}

// checkDurabilityTimeout keeps WAIT below go-redis's default read timeout
// (3s), which a pipeline's replies share.
func checkDurabilityTimeout(d time.Duration) error {
	if d < time.Millisecond || d > 2*time.Second {
		return fmt.Errorf("must be between 1ms and 2s")
	}
	return nil
}

// checkRedisURL checks the Redis URL (every form of docs/contract.md §4)
// without showing it, since it may hold a password.
func checkRedisURL(s string) error {
	if _, err := redisurl.Parse(s); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), redisurl.ErrInvalid.Error()+": "))
	}
	return nil
}

// checkHandlerURL checks an http handler's URL without showing it, since it
// may hold a password.
func checkHandlerURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an absolute http or https URL, such as http://127.0.0.1:9000/perform")
	case u.Hostname() == "":
		return fmt.Errorf("has no host")
	}
	return nil
}

func checkRedisPrefix(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("must not be empty")
	case len(s) > maxRedisPrefixBytes:
		return fmt.Errorf("longer than %d bytes", maxRedisPrefixBytes)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.:", c) >= 0) {
			return fmt.Errorf("%q: only letters, digits, '_', '-', '.' and ':' are allowed", s)
		}
	}
	return nil
}

// checkGossipKey checks the gossip key without showing it.
func checkGossipKey(s string) error {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("not valid base64 (generate a key with: openssl rand -base64 32)")
	}
	switch len(key) {
	case 16, 24, 32:
		return nil
	}
	return fmt.Errorf("decodes to %d bytes; an AES key has 16, 24 or 32", len(key))
}

func checkClusterLabel(s string) error {
	switch {
	case len(s) > maxClusterLabelBytes:
		return fmt.Errorf("longer than %d bytes", maxClusterLabelBytes)
	case hasSpaceOrControl(s):
		return fmt.Errorf("%q: must not contain spaces or control characters", s)
	}
	return nil
}

// optional lets the empty string through check.
func optional(check func(string) error) func(string) error {
	return func(s string) error {
		if s == "" {
			return nil
		}
		return check(s)
	}
}

func checkBetween(lo, hi int) func(int) error {
	return func(n int) error {
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d, got %d", lo, hi, n)
		}
		return nil
	}
}

func checkOneOf(values ...string) func(string) error {
	return func(s string) error {
		for _, v := range values {
			if s == v {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", s, strings.Join(values, ", "))
	}
}

func checkAtLeast(lo time.Duration) func(time.Duration) error {
	return func(d time.Duration) error {
		if d < lo {
			return fmt.Errorf("must be at least %s, got %s", lo, d)
		}
		return nil
	}
}

func checkPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be positive, got %s", d)
	}
	return nil
}

// problems collects every problem of a load, each a message naming its key,
// environment variable or flag.
type problems []error

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Errorf(format, args...))
}

// err returns nil without problems, or an error wrapping ErrInvalid and
// each problem.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &invalidError{problems: p}
}

// invalidError lists the problems of a configuration, one per line.
type invalidError struct{ problems []error }

func (e *invalidError) Error() string {
	if len(e.problems) == 1 {
		return ErrInvalid.Error() + ": " + e.problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d problems):", ErrInvalid, len(e.problems))
	for _, p := range e.problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

func (e *invalidError) Unwrap() []error {
	return append([]error{ErrInvalid}, e.problems...)
}

// checkHandlerHeaders reports the static headers of an http handler that
// cannot be sent: names Orderly or HTTP set, invalid names, and values with
// control characters. Values are not quoted: they may be secrets.
func checkHandlerHeaders(headers map[string]string, report func(key, msg string)) {
	names := slices.Sorted(maps.Keys(headers))
	for _, name := range names {
		if err := webhook.CheckHeaderName(name); err != nil {
			report("handler.headers", err.Error())
			continue
		}
		if strings.ContainsFunc(headers[name], func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			report("handler.headers", fmt.Sprintf("the value of %s holds a control character", name))
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
