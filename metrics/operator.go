package metrics

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
)

// The operator's metrics, registered by New:
//
//	orderly_build_info{version,goversion}          1, labelled with the build
//	orderly_job_wait_seconds{queue}                from a job's perform_at (its enqueue time, unless delayed or retried) to the start of its handler call
//	orderly_webhook_requests_total{queue,class}    webhook requests by answer: 2xx, 3xx, 4xx, 5xx, or error (no answer)
//	orderly_redis_command_duration_seconds         Redis round trips of this node's client (a pipeline is one)
//	orderly_redis_errors_total{kind}               round trips that failed: reply (an error reply) or io (no answer)
//	orderly_shard_lag_seconds{queue,shard}         per shard: seconds since its earliest due job (cluster-wide, read from Redis)

// outcomes are the outcome labels of orderly_batch_duration_seconds.
var outcomes = []string{"ok", "partial", "failed"}

// webhookClasses are the class labels of orderly_webhook_requests_total.
var webhookClasses = []string{"2xx", "3xx", "4xx", "5xx", "error"}

// memberStates are the state labels of orderly_cluster_members.
var memberStates = []string{string(orderly.MemberAlive), string(orderly.MemberDraining), string(orderly.MemberDead), string(orderly.MemberForeign)}

// redisErrorKinds are the kind labels of orderly_redis_errors_total.
var redisErrorKinds = []string{"reply", "io"}

// operator holds the metrics of this file.
type operator struct {
	wait      *prometheus.HistogramVec
	waitObs   *obsCache // wait's observers
	webhook   *prometheus.CounterVec
	redisTime prometheus.Histogram
	redisErrs *prometheus.CounterVec
	redisHook *redisHook
	buildInfo prometheus.Gauge
}

// latencyBuckets suit waits and Redis round trips alike: 100µs to 5min.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// newOperator creates the metrics of this file and registers them.
func newOperator(reg *prometheus.Registry) *operator {
	o := &operator{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "orderly", Name: "job_wait_seconds",
			Help:    "Seconds from a job's perform_at (its enqueue time, unless delayed or retried) to the start of its handler call on this node.",
			Buckets: latencyBuckets,
		}, []string{"queue"}),
		webhook: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "orderly", Name: "webhook_requests_total",
			Help: "Webhook requests sent by this node, by answer: 2xx, 3xx, 4xx, 5xx, or error (no answer: timeout, connection).",
		}, []string{"queue", "class"}),
		redisTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "orderly", Name: "redis_command_duration_seconds",
			Help:    "Seconds per Redis round trip of this node's client (a pipeline is one).",
			Buckets: latencyBuckets,
		}),
		redisErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "orderly", Name: "redis_errors_total",
			Help: "Redis round trips of this node's client that failed, by kind: reply (Redis answered an error, a fencing refusal included) or io (no answer: connection, timeout). A missing key is not a failure.",
		}, []string{"kind"}),
		buildInfo: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "orderly", Name: "build_info",
			Help:        "1, labelled with the Orderly version and the Go version of the build.",
			ConstLabels: prometheus.Labels{"version": orderly.Version, "goversion": runtime.Version()},
		}),
	}
	o.buildInfo.Set(1)
	for _, k := range redisErrorKinds {
		o.redisErrs.WithLabelValues(k)
	}
	o.redisHook = &redisHook{o: o}
	reg.MustRegister(o.wait, o.webhook, o.redisTime, o.redisErrs, o.buildInfo)
	o.waitObs = &obsCache{vec: o.wait}
	return o
}

// InitQueues creates every labelled series of the named queues at zero, so
// that a rate or an alert sees a queue before its first event, and every
// member state of orderly_cluster_members. Call it with the configured
// queues before serving /metrics.
func (m *Metrics) InitQueues(queues ...string) {
	for _, q := range queues {
		for _, c := range []*prometheus.CounterVec{m.enqueued, m.processed, m.failed, m.dead, m.restored, m.leaseLosses, m.settleRetries, m.repeated} {
			c.WithLabelValues(q)
		}
		for _, o := range outcomes {
			m.batch.WithLabelValues(q, o)
		}
		for _, c := range webhookClasses {
			m.op.webhook.WithLabelValues(q, c)
		}
		m.op.wait.WithLabelValues(q)
	}
}

// Middleware returns the server middleware that observes
// orderly_job_wait_seconds: for each job of a call, the time from its
// perform_at to the start of the call. Add it to orderly.Config.Middleware.
func (m *Metrics) Middleware() orderly.Middleware {
	return func(next orderly.HandlerFunc) orderly.HandlerFunc {
		return func(ctx context.Context, b *orderly.Batch) error {
			now := time.Now()
			h := m.op.waitObs.get(b.Queue, "")
			for _, j := range b.Jobs {
				if !j.PerformAt.IsZero() {
					h.Observe(max(0, now.Sub(j.PerformAt).Seconds()))
				}
			}
			return next(ctx, b)
		}
	}
}

// WebhookAnswered counts one webhook request of queue: status is the
// answer's HTTP status, 0 when there was none. It fits
// webhook.Config.Observe.
func (m *Metrics) WebhookAnswered(queue string, status int) {
	m.op.webhook.WithLabelValues(queue, statusClass(status)).Inc()
}

// statusClass is the class label of a status.
func statusClass(status int) string {
	switch {
	case status >= 200 && status <= 299:
		return "2xx"
	case status >= 300 && status <= 399:
		return "3xx"
	case status >= 400 && status <= 499:
		return "4xx"
	case status >= 500 && status <= 599:
		return "5xx"
	}
	return "error"
}

// RedisHook returns the go-redis hook that observes
// orderly_redis_command_duration_seconds and orderly_redis_errors_total.
// Add it to the node's client with AddHook.
func (m *Metrics) RedisHook() redis.Hook { return m.op.redisHook }

// redisHook times round trips and counts their failures.
type redisHook struct{ o *operator }

var _ redis.Hook = (*redisHook)(nil)

func (h *redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil && !errors.Is(err, context.Canceled) {
			h.o.redisErrs.WithLabelValues("io").Inc()
		}
		return conn, err
	}
}

func (h *redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(start, err)
		return err
	}
}

func (h *redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		failure := err
		for _, c := range cmds { // a failed command fails the round trip
			if e := c.Err(); failure == nil && e != nil && !errors.Is(e, redis.Nil) {
				failure = e
			}
		}
		h.observe(start, failure)
		return err
	}
}

// observe records one round trip. A missing key (redis.Nil) and a
// cancelled caller are not failures of Redis.
func (h *redisHook) observe(start time.Time, err error) {
	h.o.redisTime.Observe(time.Since(start).Seconds())
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		if strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return // a script not cached yet: the client sends it and retries
		}
		h.o.redisErrs.WithLabelValues("reply").Inc()
		return
	}
	h.o.redisErrs.WithLabelValues("io").Inc()
}

// descShardLag is orderly_shard_lag_seconds.
var descShardLag = prometheus.NewDesc("orderly_shard_lag_seconds",
	"Seconds since the earliest perform_at among a shard's queued ids (0 if none is due). Read from Redis: the same on every node.",
	[]string{"queue", "shard"}, nil)

// shardLabel is the shard label of a shard number.
func shardLabel(shard int) string { return strconv.Itoa(shard) }
