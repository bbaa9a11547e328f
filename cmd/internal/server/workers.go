package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/internal/shardctx"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// buildWorkers builds the workers of the configured queues, and a function
// that closes their webhook senders (webhook.Sender.Close), to call once the
// node that runs the workers has stopped. observe, when not nil, is told the
// answer of each webhook request (webhook.Config.Observe) with its queue.
//
// The handlers of pull queues hand their batches to broker (nil when there
// is none).
func buildWorkers(queues []config.QueueConfig, log *slog.Logger, observe func(queue string, status int), broker *pull.Broker) ([]orderly.Worker, func(), error) {
	out := make([]orderly.Worker, 0, len(queues))
	var senders []*webhook.Sender
	closeAll := func() {
		for _, s := range senders {
			_ = s.Close() // never fails
		}
	}
	for _, q := range queues {
		w := orderly.Worker{
			Queue:     q.Name,
			Shards:    q.Shards,
			BatchSize: q.BatchSize,
			Prefetch:  q.Prefetch,
			// 0: orderly.DefaultMaxPrefetch, or Prefetch when it is set.
			MaxPrefetch: q.MaxPrefetch,
			// 0: one call after the other (pull queues: below).
			ConcurrentCalls: q.ConcurrentCalls,
			Timeout:         q.Timeout,
			// 0: orderly.DefaultMaxPayloadsPerCall.
			MaxPayloadsPerCall: q.MaxPayloadsPerCall,
			State:              q.State,
			MaxStateBytes:      q.MaxStateBytes,
			FeedMaxLen:         feedMaxLen(q.FeedMaxLen),
			DedupWindow:        q.DedupWindow,
			RetainFinished:     q.RetainFinished,
			MaxFinished:        q.MaxFinished,
			MaxConcurrency:     q.MaxConcurrency,
			Weight:             q.Weight,
			RateLimit:          rateLimit(q.RateLimit),
			RetryIn:            retryPolicy(q.Retry),
			// One meaning: 0 is the default, config.NoRetries is
			// orderly.NoRetries.
			MaxRetryCount: q.MaxRetryCount,
		}
		switch q.Handler.Type {
		case config.HandlerNoop:
			w.Handler = func(context.Context, *orderly.Batch) error { return nil }
		case config.HandlerHTTP:
			wc := webhookConfig(q.Handler, log)
			if observe != nil {
				name := q.Name
				wc.Observe = func(status int) { observe(name, status) }
			}
			s, err := webhook.New(wc)
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("queue %s: %w", q.Name, err)
			}
			senders = append(senders, s)
			w.Handler = s.Handle
			if q.Handler.RetriesExhaustedURL != "" {
				ds, err := deadSender(q, wc)
				if err != nil {
					closeAll()
					return nil, nil, err
				}
				senders = append(senders, ds)
				w.RetriesExhausted = reportDead(ds, q.Name)
			}
			// The call's deadline (its context's, Orderly-Deadline, and
			// the in-flight record's bound) is the request's timeout when
			// the queue sets no shorter one.
			if w.Timeout == 0 || q.Handler.Timeout < w.Timeout {
				w.Timeout = q.Handler.Timeout
			}
		case config.HandlerPull:
			if broker == nil {
				closeAll()
				return nil, nil, fmt.Errorf("queue %s: a pull queue needs a pull broker", q.Name)
			}
			w.Handler, w.Timeout = pullHandler(broker, q)
			if w.ConcurrentCalls == 0 && w.MaxConcurrency == 0 {
				// Every call of a window waits for a pull at once, so
				// that one pull takes many ids of a shard.
				w.ConcurrentCalls = persistence.MaxBatchSize
			}
			if q.Handler.RetriesExhaustedURL != "" {
				ds, err := deadSender(q, webhookConfig(q.Handler, log))
				if err != nil {
					closeAll()
					return nil, nil, err
				}
				senders = append(senders, ds)
				w.RetriesExhausted = reportDead(ds, q.Name)
			}
		default:
			w.Handler = logHandler(log, !q.Handler.HidePayloads)
		}
		out = append(out, w)
	}
	return out, closeAll, nil
}

// pullHandler returns the handler of a pull queue and its call timeout:
// the queue's, or twice the lease when it sets none. The lease is
// handler.lease, or pull.DefaultLease capped at half the queue's timeout.
func pullHandler(broker *pull.Broker, q config.QueueConfig) (orderly.HandlerFunc, time.Duration) {
	lease, timeout := q.Handler.Lease, q.Timeout
	if lease == 0 {
		lease = pull.DefaultLease
		if timeout > 0 {
			lease = min(lease, timeout/2)
		}
	}
	if timeout == 0 {
		timeout = 2 * lease
	}
	return broker.Handler(q.Name, pull.Options{BatchSize: max(q.BatchSize, 1), Lease: lease}), timeout
}

// PullAPI is the HTTP API of a pull broker on store, for the pull
// scenarios of orderly bench (bench.PullAPI).
func PullAPI(store persistence.Store, broker *pull.Broker) (http.Handler, error) {
	return web.New(&web.Config{Store: store, Pull: broker, Logger: slog.New(slog.DiscardHandler)})
}

// workerTokens returns the worker tokens of the pull queues.
func workerTokens(queues []config.QueueConfig) map[string]string {
	var out map[string]string
	for _, q := range queues {
		if q.Handler.Type == config.HandlerPull && q.Handler.WorkerToken != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[q.Name] = q.Handler.WorkerToken
		}
	}
	return out
}

// deadSender is the sender of a queue's retries_exhausted_url: the
// queue's webhook settings (secret, headers, client, timeout) to that URL.
func deadSender(q config.QueueConfig, wc *webhook.Config) (*webhook.Sender, error) {
	dc := *wc
	dc.URL = q.Handler.RetriesExhaustedURL
	dc.Observe = nil
	ds, err := webhook.New(&dc)
	if err != nil {
		return nil, fmt.Errorf("queue %s: retries_exhausted_url: %w", q.Name, err)
	}
	return ds, nil
}

// reportDead is the retries-exhausted hook of a webhook or pull queue: it posts
// the dead jobs (all of one shard) to the queue's retries_exhausted_url,
// trying again until the URL takes them or the hook's context ends (the
// node then leaves the lease to expire, and the next owner reports them
// again). The report names the shard that ran them, which the hook's
// context carries (internal/shardctx): on a resharded queue, a shard of its
// current generation, which the configured count cannot give.
func reportDead(ds *webhook.Sender, queue string) func(context.Context, []orderly.Job) {
	return func(ctx context.Context, dead []orderly.Job) {
		if len(dead) == 0 {
			return
		}
		ref, ok := shardctx.Of(ctx)
		if !ok {
			// Every shard actor sets it; a report without is a bug here.
			panic("retries_exhausted hook called without its shard")
		}
		_ = ds.ReportDead(ctx, queue, ref.Shard, dead) // logged by the sender
	}
}

func retryPolicy(r config.RetryConfig) orderly.RetryPolicy {
	switch r.Policy {
	case config.RetryLinear:
		p := orderly.LinearRetry(r.Base)
		if r.Max > 0 {
			return func(n int, err error) time.Duration { return min(p(n, err), r.Max) }
		}
		return p
	case config.RetryExponential:
		return orderly.ExponentialRetry(r.Base, r.Max)
	}
	return orderly.LowkiqRetry()
}

// logPayloads is how many payloads of a job the log handler shows.
const logPayloads = 3

// logHandler logs every job of a batch and succeeds: the handler of the
// quick start. With payloads, a job's line shows the start of its first
// payloads (config.LogPayloadBytes of each): a line stays short whatever
// the producers send. Without, it shows only their count. A payload's
// headers, when it has some, follow it as "k=v" pairs, keys sorted.
func logHandler(log *slog.Logger, payloads bool) orderly.HandlerFunc {
	return func(ctx context.Context, b *orderly.Batch) error {
		for _, j := range b.Jobs {
			attrs := []any{"queue", b.Queue, "shard", b.Shard, "job_id", j.ID, "retry_count", j.RetryCount, "payloads", len(j.Payloads), "delivery", b.Delivery}
			for i, p := range j.Payloads {
				if i == logPayloads || !payloads {
					break
				}
				attrs = append(attrs, fmt.Sprintf("payload%d", i), preview(p.Data))
				if len(p.Headers) > 0 {
					attrs = append(attrs, fmt.Sprintf("headers%d", i), headerPreview(p.Headers))
				}
			}
			log.Info("job", attrs...)
		}
		return nil
	}
}

// headerPreview renders a payload's headers for a log line: "k=v" pairs,
// keys sorted, cut as a payload is.
func headerPreview(h map[string]string) string {
	keys := slices.Sorted(maps.Keys(h))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + h[k])
	}
	return preview([]byte(b.String()))
}

// preview renders the start of a payload for a log line: text as it is,
// other bytes in base64, cut after config.LogPayloadBytes with "…".
func preview(b []byte) string {
	cut := len(b) > config.LogPayloadBytes
	if cut {
		b = b[:config.LogPayloadBytes]
		// Text cut inside a character stays text: drop the character's
		// first bytes.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	s := string(b)
	if !utf8.Valid(b) {
		s = "base64:" + base64.StdEncoding.EncodeToString(b)
	}
	if cut {
		s += "…"
	}
	return s
}

// webhookConfig is the webhook configuration of an http handler.
func webhookConfig(h config.HandlerConfig, log *slog.Logger) *webhook.Config {
	c := &webhook.Config{URL: h.URL, Timeout: h.Timeout, Logger: log, NetHTTP: h.Client == config.HTTPClientNetHTTP}
	if h.Secret != "" {
		c.Secret = []byte(h.Secret)
	}
	if h.Signature == config.SignatureStandard {
		// Validated by config.Load: the key of a whsec_ secret.
		key, err := wire.StandardKey(h.Secret)
		if err == nil {
			c.Secret = key
			c.Scheme = wire.SchemeStandard
		}
	}
	if len(h.Headers) > 0 {
		c.Header = make(http.Header, len(h.Headers))
		for k, v := range h.Headers {
			c.Header.Set(k, v)
		}
	}
	return c
}

// stateQueues maps each stateful queue to its max_state_bytes, for the
// state endpoints of the HTTP API.
func stateQueues(queues []config.QueueConfig) map[string]int {
	out := map[string]int{}
	for _, q := range queues {
		if q.State {
			out[q.Name] = q.MaxStateBytes
		}
	}
	return out
}

// queueLimits maps each queue with a max_concurrency or a rate_limit to
// them, for the queue answers of the HTTP API.
func queueLimits(queues []config.QueueConfig) map[string]apiv1.QueueLimits {
	out := map[string]apiv1.QueueLimits{}
	for _, q := range queues {
		l := apiv1.QueueLimits{MaxConcurrency: q.MaxConcurrency}
		if r := rateLimit(q.RateLimit); r != nil {
			l.RateLimit = &apiv1.RateLimit{PerSecond: r.PerSecond, Burst: r.Burst}
		}
		if l.MaxConcurrency > 0 || l.RateLimit != nil {
			out[q.Name] = l
		}
	}
	return out
}

// rateLimit is the worker's rate limit of a queue's configuration.
func rateLimit(r *config.RateLimitConfig) *orderly.RateLimit {
	if r == nil {
		return nil
	}
	burst := r.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(r.PerSecond)))
	}
	return &orderly.RateLimit{PerSecond: r.PerSecond, Burst: burst}
}

// feedMaxLen maps the file's feed_max_len (absent: the default; 0: no
// feed) to Worker.FeedMaxLen.
func feedMaxLen(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return orderly.NoFeed
	}
	return *n
}
