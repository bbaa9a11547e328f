package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cmd/internal/usage"
	"github.com/orderlyhq/orderly/persistence"
)

// Keys of the file's mappings.
func topKeys() []string { return []string{"node", "queues", "periodic"} }
func periodicKeys() []string {
	return []string{"name", "queue", "schedule", "id", "payload"}
}
func retryKeys() []string { return []string{"policy", "base", "max"} }
func rateKeys() []string  { return []string{"per_second", "burst"} }
func handlerKeys() []string {
	return []string{"type", "url", "retries_exhausted_url", "timeout", "payloads", "secret", "signature", "headers", "client", "lease", "worker_token"}
}
func queueKeys() []string {
	return []string{"name", "shards", "batch_size", "prefetch", "max_prefetch", "concurrent_calls", "max_retry_count", "max_payloads_per_call", "timeout", "retry", "handler", "max_concurrency", "weight", "rate_limit", "state", "max_state_bytes", "feed_max_len", "dedup_window", "retain_finished", "max_finished"}
}

// fileParser walks the YAML tree of the config file. It reads the tree
// rather than decoding into structs (with yaml's KnownFields) so that every
// problem names its full key, e.g. queues[1].handler.url, and its line, and
// so that every problem is reported, not just the first.
type fileParser struct {
	name     string
	problems []fileProblem
}

// fileProblem is a problem of the file, reported in line order.
type fileProblem struct {
	line int
	msg  string
}

// parseFile applies the file's node settings to cfg.Node and sets
// cfg.Queues and cfg.Periodic, adding a problem for each error.
func parseFile(name string, data []byte, cfg *Config, p *problems) {
	fp := &fileParser{name: name}
	defer fp.report(p)
	root := fp.document(data, p)
	if root == nil {
		return
	}
	periodicLines := fp.top(root, cfg)
	fp.checkPeriodic(cfg, periodicLines)
}

// report adds the file's problems to p, in line order.
func (fp *fileParser) report(p *problems) {
	slices.SortStableFunc(fp.problems, func(a, b fileProblem) int { return a.line - b.line })
	for _, fpr := range fp.problems {
		p.addf("config file %s: %s", fp.name, fpr.msg)
	}
}

// document returns the root of the file's YAML document; nil when the file
// holds nothing (empty, only comments, or "---"), or is not UTF-8 text in
// one YAML document (a problem then says why: the parser's syntax errors go
// to p at once, the others to the file's problems).
func (fp *fileParser) document(data []byte, p *problems) *yaml.Node {
	if line, msg := checkText(data); msg != "" {
		fp.problem(line, "%s", msg)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) { // EOF: an empty file
			p.addf("config file %s: %s", fp.name, syntaxError(err))
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.addf("config file %s: %s", fp.name, syntaxError(err))
		return nil
	default:
		fp.problem(next.Line, "more than one YAML document")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		p.addf("config file %s: not a YAML document", fp.name)
		return nil
	}
	root := resolveAlias(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.ShortTag() == tagNull {
		return nil // only comments, or "---"
	}
	return root
}

// top reads the file's top-level keys: node into cfg.Node, queues into
// cfg.Queues and periodic into cfg.Periodic. It returns the lines of each
// periodic job's keys (periodic).
func (fp *fileParser) top(root *yaml.Node, cfg *Config) (periodicLines []map[string]int) {
	byKey := make(map[string]setting)
	for _, s := range settings() {
		byKey[s.key()] = s
	}
	fp.mapping(root, "", topKeys(), func(key string, line int, v *yaml.Node) {
		switch key {
		case "node":
			fp.mapping(v, "node", nodeSettingKeys(), func(key string, line int, v *yaml.Node) {
				if err := byKey[key].setYAML(&cfg.Node, v); err != nil {
					fp.errorf(line, "node."+key, "%v", err)
				}
			})
		case "queues":
			fp.queues(v, line, cfg)
		case "periodic":
			if v = resolveAlias(v); v.Kind != yaml.SequenceNode {
				fp.errorf(line, "periodic", "must be a list of periodic jobs, not a %s", kindName(v))
				return
			}
			for i, item := range v.Content {
				p, lines := fp.periodic(item, fmt.Sprintf("periodic[%d]", i))
				cfg.Periodic = append(cfg.Periodic, p)
				periodicLines = append(periodicLines, lines)
			}
		}
	})
	return periodicLines
}

// queues reads the list of queues (v, at line) into cfg.Queues, and
// reports a name given to two queues.
func (fp *fileParser) queues(v *yaml.Node, line int, cfg *Config) {
	if v = resolveAlias(v); v.Kind != yaml.SequenceNode {
		fp.errorf(line, "queues", "must be a list of queues, not a %s", kindName(v))
		return
	}
	lines := make([]int, len(v.Content))
	for i, item := range v.Content {
		lines[i] = item.Line
		cfg.Queues = append(cfg.Queues, fp.queue(item, queuePath(i)))
	}
	checkDuplicateQueues(cfg.Queues, func(i int, msg string) {
		fp.errorf(lines[i], queuePath(i)+".name", "%s", msg)
	})
}

// checkPeriodic checks each periodic job (the lines of its keys in lines):
// a name of its own, a queue of the file (or the default one when the file
// has none), a schedule and an id.
func (fp *fileParser) checkPeriodic(cfg *Config, lines []map[string]int) {
	queues := map[string]bool{}
	for _, q := range cfg.Queues {
		queues[q.Name] = true
	}
	if len(cfg.Queues) == 0 {
		queues[DefaultQueueName] = true
	}
	names := map[string]bool{}
	for i, p := range cfg.Periodic {
		at, lines := fmt.Sprintf("periodic[%d]", i), lines[i]
		line := func(key string) int {
			if l, ok := lines[key]; ok {
				return l
			}
			return lines[""]
		}
		if p.Name == "" {
			fp.errorf(line("name"), at+".name", "is required")
		} else if names[p.Name] {
			fp.errorf(line("name"), at+".name", "%q names two periodic jobs", p.Name)
		}
		names[p.Name] = true
		if !queues[p.Queue] {
			fp.errorf(line("queue"), at+".queue", "%q is not a queue of this file", p.Queue)
		}
		if _, err := orderly.ParseCron(p.Schedule); err != nil {
			fp.errorf(line("schedule"), at+".schedule", "%v", err)
		}
		if err := persistence.ValidateID(p.ID, -1); err != nil {
			var fe *persistence.FieldError
			if errors.As(err, &fe) {
				fp.errorf(line("id"), at+".id", "%s", fe.Reason)
			} else {
				fp.errorf(line("id"), at+".id", "%v", err)
			}
		}
	}
}

// periodic parses one periodic job and the lines of its keys ("" is the
// item's own line).
func (fp *fileParser) periodic(item *yaml.Node, at string) (PeriodicConfig, map[string]int) {
	var p PeriodicConfig
	lines := map[string]int{"": item.Line}
	fp.mapping(item, at, periodicKeys(), func(key string, line int, v *yaml.Node) {
		lines[key] = line
		switch key {
		case "name":
			decodeInto(fp, v, at+".name", line, &p.Name)
		case "queue":
			decodeInto(fp, v, at+".queue", line, &p.Queue)
		case "schedule":
			decodeInto(fp, v, at+".schedule", line, &p.Schedule)
		case "id":
			decodeInto(fp, v, at+".id", line, &p.ID)
		case "payload":
			var x any
			if err := resolveAlias(v).Decode(&x); err != nil {
				fp.errorf(line, at+".payload", "%v", err)
				return
			}
			b, err := json.Marshal(x)
			if err != nil {
				fp.errorf(line, at+".payload", "cannot be written as JSON: %v", err)
				return
			}
			p.Payload = b
		}
	})
	return p, lines
}

// checkText returns a problem and its line if data is not UTF-8 text that
// YAML accepts. (The YAML parser reports these without a line.)
func checkText(data []byte) (line int, msg string) {
	line = 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, "not valid UTF-8 text"
		case r == '\n':
			line++
		case !yamlPrintable(r):
			return line, fmt.Sprintf("control character %U is not allowed", r)
		}
		data = data[size:]
	}
	return 0, ""
}

// yamlPrintable reports whether YAML allows r in a file.
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7e || r == 0x85 ||
		r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
}

// syntaxError formats the YAML parser's error as "problem (line N)". The
// parser leaves out the line of a problem on the first line.
func syntaxError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, problem, ok := strings.Cut(rest, ": "); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return problem + " (line " + n + ")"
			}
		}
	}
	if strings.HasPrefix(msg, "unknown anchor") { // it names the anchor, but has no line
		return msg
	}
	return msg + " (line 1)"
}

// queue reads one queue, fills its defaults and validates it.
func (fp *fileParser) queue(n *yaml.Node, path string) QueueConfig {
	r := &queueReader{fp: fp, path: path, q: defaultQueue(""), lines: map[string]int{"": n.Line}, bad: map[string]bool{}}
	if !fp.mapping(n, path, queueKeys(), r.key) {
		return r.q
	}
	r.finish()
	return r.q
}

// queueReader reads the keys of one queue at path into q.
type queueReader struct {
	fp   *fileParser
	path string
	q    QueueConfig
	// lines holds the line of each key given, relative to the queue ("" is
	// the queue's own line); bad the keys whose value could not be decoded.
	lines map[string]int
	bad   map[string]bool
	// handlerTimeout and payloadsGiven are set when the handler gives
	// timeout and payloads.
	handlerTimeout, payloadsGiven bool
}

// key reads one key of the queue.
func (r *queueReader) key(key string, line int, v *yaml.Node) {
	r.lines[key] = line
	fp, q, at := r.fp, &r.q, r.path+"."+key
	var good bool
	switch key {
	case "name":
		good = decodeInto(fp, v, at, line, &q.Name)
	case "shards":
		good = decodeInto(fp, v, at, line, &q.Shards)
	case "batch_size":
		good = decodeInto(fp, v, at, line, &q.BatchSize)
	case "prefetch":
		good = decodeInto(fp, v, at, line, &q.Prefetch)
	case "max_prefetch":
		good = decodeInto(fp, v, at, line, &q.MaxPrefetch)
	case "concurrent_calls":
		good = decodeInto(fp, v, at, line, &q.ConcurrentCalls)
	case "max_retry_count":
		good = decodeMaxRetryCount(fp, v, at, line, &q.MaxRetryCount)
	case "max_payloads_per_call":
		good = decodeInto(fp, v, at, line, &q.MaxPayloadsPerCall)
	case "max_concurrency":
		good = decodeInto(fp, v, at, line, &q.MaxConcurrency)
	case "weight":
		good = decodeInto(fp, v, at, line, &q.Weight)
	case "timeout":
		good = decodeInto(fp, v, at, line, &q.Timeout)
	case "state":
		good = decodeInto(fp, v, at, line, &q.State)
	case "max_state_bytes":
		good = decodeInto(fp, v, at, line, &q.MaxStateBytes)
	case "retain_finished":
		good = decodeInto(fp, v, at, line, &q.RetainFinished)
	case "max_finished":
		good = decodeInto(fp, v, at, line, &q.MaxFinished)
	case "feed_max_len":
		var n int
		if good = decodeInto(fp, v, at, line, &n); good {
			q.FeedMaxLen = &n
		}
	case "dedup_window":
		good = decodeInto(fp, v, at, line, &q.DedupWindow)
	case "retry":
		good = fp.mapping(v, at, retryKeys(), r.section("retry", r.retryKey))
	case "rate_limit":
		q.RateLimit = &RateLimitConfig{}
		good = fp.mapping(v, at, rateKeys(), r.section("rate_limit", r.rateLimitKey))
	case "handler":
		good = fp.mapping(v, at, handlerKeys(), r.section("handler", r.handlerKey))
	}
	r.bad[key] = !good
}

// section reads the keys of the queue's mapping section with read, which
// decodes one key (at is its path) and reports whether its value was good.
func (r *queueReader) section(section string, read func(key, at string, line int, v *yaml.Node) bool) func(string, int, *yaml.Node) {
	return func(key string, line int, v *yaml.Node) {
		k := section + "." + key
		r.lines[k] = line
		r.bad[k] = !read(key, r.path+"."+k, line, v)
	}
}

// retryKey reads one key of the queue's retry.
func (r *queueReader) retryKey(key, at string, line int, v *yaml.Node) bool {
	switch key {
	case "policy":
		return decodeInto(r.fp, v, at, line, &r.q.Retry.Policy)
	case "base":
		return decodeInto(r.fp, v, at, line, &r.q.Retry.Base)
	case "max":
		return decodeInto(r.fp, v, at, line, &r.q.Retry.Max)
	}
	return false
}

// rateLimitKey reads one key of the queue's rate_limit.
func (r *queueReader) rateLimitKey(key, at string, line int, v *yaml.Node) bool {
	switch key {
	case "per_second":
		return decodeInto(r.fp, v, at, line, &r.q.RateLimit.PerSecond)
	case "burst":
		return decodeInto(r.fp, v, at, line, &r.q.RateLimit.Burst)
	}
	return false
}

// handlerKey reads one key of the queue's handler.
func (r *queueReader) handlerKey(key, at string, line int, v *yaml.Node) bool {
	h := &r.q.Handler
	switch key {
	case "type":
		return decodeInto(r.fp, v, at, line, &h.Type)
	case "url":
		return decodeInto(r.fp, v, at, line, &h.URL)
	case "retries_exhausted_url":
		return decodeInto(r.fp, v, at, line, &h.RetriesExhaustedURL)
	case "timeout":
		r.handlerTimeout = true
		return decodeInto(r.fp, v, at, line, &h.Timeout)
	case "payloads":
		var show bool
		good := decodeInto(r.fp, v, at, line, &show)
		h.HidePayloads = !show
		r.payloadsGiven = true
		return good
	case "secret":
		return decodeInto(r.fp, v, at, line, &h.Secret)
	case "signature":
		return decodeInto(r.fp, v, at, line, &h.Signature)
	case "headers":
		return decodeHeaders(r.fp, v, at, line, &h.Headers)
	case "client":
		return decodeInto(r.fp, v, at, line, &h.Client)
	case "lease":
		return decodeInto(r.fp, v, at, line, &h.Lease)
	case "worker_token":
		return decodeInto(r.fp, v, at, line, &h.WorkerToken)
	}
	return false
}

// finish fills the defaults that depend on other keys and validates the
// queue, reporting what was not already reported when a value could not
// be decoded.
func (r *queueReader) finish() {
	q := &r.q
	if q.Handler.Type == HandlerHTTP && !r.handlerTimeout {
		q.Handler.Timeout = DefaultHTTPHandlerTimeout
	}
	if r.payloadsGiven && q.Handler.Type != HandlerLog && !r.bad["handler.payloads"] {
		r.fp.errorf(lineOf(r.lines, "handler.payloads"), r.path+".handler.payloads", "only allowed for handler type log, not %s", q.Handler.Type)
		r.bad["handler.payloads"] = true
	}
	validateQueue(q, func(key, msg string) {
		section, _, _ := strings.Cut(key, ".")
		if !r.bad[key] && !r.bad[section] { // already reported
			r.fp.errorf(lineOf(r.lines, key), r.path+"."+key, "%s", msg)
		}
	})
}

// decodeMaxRetryCount decodes a queue's max_retry_count: a count of 1 or
// more, or -1 or none for no retries. 0 is refused: it used to mean no
// retries, while orderly.Worker reads 0 as the default, so a file that
// says 0 must say which it means.
func decodeMaxRetryCount(fp *fileParser, v *yaml.Node, path string, line int, dst *int) bool {
	if r := resolveAlias(v); r.Kind == yaml.ScalarNode && r.ShortTag() == tagStr && r.Value == "none" {
		*dst = NoRetries
		return true
	}
	n, err := decodeYAML[int](v)
	switch {
	case err != nil:
		err = fmt.Errorf("%v: give a count, or -1 or none for no retries", err)
	case n == 0:
		err = errors.New(MaxRetryZero)
	case n < NoRetries:
		err = fmt.Errorf("must be 1 or more, or -1 or none for no retries, got %d", n)
	}
	if err != nil {
		fp.errorf(line, path, "%v", err)
		return false
	}
	*dst = n
	return true
}

// lineOf returns the line of key, or for a missing key the line of the
// mapping that lacks it. lines must hold "".
func lineOf(lines map[string]int, key string) int {
	for {
		if line, ok := lines[key]; ok {
			return line
		}
		key = key[:max(strings.LastIndexByte(key, '.'), 0)]
	}
}

// decodeInto decodes v into *dst, or reports why it cannot and returns
// false.
func decodeInto[T any](fp *fileParser, v *yaml.Node, path string, line int, dst *T) bool {
	x, err := decodeYAML[T](v)
	if err != nil {
		fp.errorf(line, path, "%v", err)
		return false
	}
	*dst = x
	return true
}

// mapping calls fn for each key of the mapping n (at path; "" for the top)
// that is in known and has a non-null value, with the key's line and its
// value. It reports unknown and repeated keys, and returns false if n is not
// a mapping. Like decodeYAML, it resolves aliases itself.
func (fp *fileParser) mapping(n *yaml.Node, path string, known []string, fn func(key string, line int, v *yaml.Node)) bool {
	line := n.Line // of an alias, not of what it stands for
	if n = resolveAlias(n); n.Kind != yaml.MappingNode {
		keys := ""
		if len(known) <= 10 {
			keys = " with keys " + strings.Join(known, ", ")
		}
		fp.problem(line, "%s must be a mapping%s, not a %s", orTop(path), keys, kindName(n))
		return false
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := resolveAlias(k).Value
		full := showKey(key)
		if path != "" {
			full = path + "." + full
		}
		switch {
		case resolveAlias(k).Kind != yaml.ScalarNode:
			fp.problem(k.Line, "%s has a key that is not a string", orTop(path))
		case k.ShortTag() == "!!merge":
			fp.problem(k.Line, "merge keys (<<) are not supported, in %s", orTop(path))
		case !slices.Contains(known, key):
			hint := ""
			if s := usage.Suggest(key, known); s != "" {
				hint = strings.TrimPrefix(path+"."+s, ".")
			} else if path == "" && slices.Contains(nodeSettingKeys(), key) {
				hint = "node." + key
			}
			if hint != "" {
				hint = "; did you mean " + hint + "?"
			}
			fp.add(k.Line, "unknown key "+full, hint)
		default:
			if first, dup := seen[key]; dup {
				fp.errorf(k.Line, full, "given twice (first at line %d)", first)
				continue
			}
			seen[key] = k.Line
			if r := resolveAlias(v); r.Kind == yaml.ScalarNode && r.ShortTag() == tagNull {
				continue // a null value counts as absent
			}
			fn(key, k.Line, v)
		}
	}
	return true
}

func nodeSettingKeys() []string {
	var keys []string
	for _, s := range settings() {
		keys = append(keys, s.key())
	}
	return keys
}

// orTop names path in a message, "" being the top level.
func orTop(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// showKey shows a key in a message: as is if plain, else quoted and
// shortened.
func showKey(key string) string {
	if len(key) <= 64 && key != "" && !hasSpaceOrControl(key) && !strings.ContainsAny(key, `"'`) {
		return key
	}
	if len(key) > 64 {
		key = key[:61] + "..."
	}
	return strconv.Quote(key)
}

// errorf reports a problem with the value at path.
func (fp *fileParser) errorf(line int, path, format string, args ...any) {
	fp.problem(line, "%s: %s", path, fmt.Sprintf(format, args...))
}

// problem reports a problem of the file, with its line.
func (fp *fileParser) problem(line int, format string, args ...any) {
	fp.add(line, fmt.Sprintf(format, args...), "")
}

// add reports msg, then its line, then hint.
func (fp *fileParser) add(line int, msg, hint string) {
	fp.problems = append(fp.problems, fileProblem{line, fmt.Sprintf("%s (line %d)%s", msg, line, hint)})
}

// decodeHeaders decodes handler.headers: a mapping of header names to
// single values. A name given twice, in any case, is an error.
func decodeHeaders(fp *fileParser, v *yaml.Node, path string, line int, dst *map[string]string) bool {
	n := resolveAlias(v)
	if n.Kind != yaml.MappingNode {
		fp.errorf(line, path, "must be a mapping of header names to values, not a %s", kindName(n))
		return false
	}
	out := make(map[string]string, len(n.Content)/2)
	canon := make(map[string]bool, len(n.Content)/2)
	good := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolveAlias(n.Content[i]), resolveAlias(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode || val.ShortTag() == tagNull {
			fp.errorf(n.Content[i].Line, path, "must map header names to single values")
			good = false
			continue
		}
		c := strings.ToLower(k.Value)
		if canon[c] {
			fp.errorf(n.Content[i].Line, path, "the header %s is given twice", showKey(k.Value))
			good = false
			continue
		}
		canon[c] = true
		out[k.Value] = val.Value
	}
	*dst = out
	return good
}
