// Package metrics exposes a node's Prometheus metrics.
//
// Event counters are counted where the events happen on this node: Store
// wraps the node's persistence.Store and counts every enqueue and every
// settlement (processed, failed, dead, restored), and Metrics is the node's
// orderly.Observer (batch durations, lease losses). Gauges are read when
// scraped: queue metrics from Redis (the same for every node: aggregate them
// with max, not sum), the shards this node serves, the cluster's members as
// it sees them, and the Redis round trips of its client.
//
//	orderly_jobs_enqueued_total{queue}         jobs enqueued through this node (HTTP, actor messages)
//	orderly_jobs_duplicate_total{queue}        of those, duplicates under the queue's dedup window, not stored
//	orderly_jobs_processed_total{queue}        ids acknowledged by this node
//	orderly_jobs_failed_total{queue}           ids failed on this node
//	orderly_jobs_dead_total{queue}             payloads this node moved to the morgue
//	orderly_jobs_snoozed_total{queue}          ids their handler snoozed on this node (docs/contract.md §3.11)
//	orderly_jobs_discarded_total{queue}        ids their handler discarded on this node
//	orderly_jobs_expired_total{queue}          payloads this node discarded at fetch because they expired (§3.15)
//	orderly_jobs_restored_total{queue}         ids put back into the queue unprocessed: a crashed owner's in-flight batch, or ids a stop cut short
//	orderly_batch_duration_seconds{queue,outcome}  handler calls (outcome ok, partial, failed)
//	orderly_lease_losses_total{queue}          leases this node lost while holding them
//	orderly_settle_retries_total{queue}        settles of handled windows sent again after a failed try (no handler call again)
//	orderly_deliveries_repeated_total{queue}   ids handled under a lease lost before their settle committed: the next owner delivers them again
//	orderly_handler_stuck_seconds{queue,shard} age of a handler call running past its deadline (absent otherwise)
//	orderly_shards_owned{queue}                shards this node serves
//	orderly_cluster_members{state}             members as this node sees them (alive, draining, dead)
//	orderly_queue_length{queue}, orderly_queue_fresh, orderly_queue_retries, orderly_queue_morgue_length,
//	orderly_queue_busy, orderly_queue_lag_seconds, orderly_queue_processed_total, orderly_queue_failed_total,
//	orderly_queue_snoozed_total, orderly_queue_discarded_total, orderly_queue_expired_total,
//	orderly_queue_paused (1 while paused, docs/contract.md §9)
//	orderly_queue_paused (1 while paused, docs/contract.md §9), orderly_queue_cancelled_total (§3.13)
//	                                           the queue as Redis holds it (cluster-wide)
//	orderly_reshard_moved_ids{queue}, orderly_reshard_left_ids{queue}
//	                                           a running reshard's ids moved and still to move (absent otherwise, §3.17)
//	orderly_redis_round_trips_total, orderly_redis_commands_total
//	                                           what this node's Redis client sent
//
// and those of the operator (build, waits, webhooks, Redis latency and
// errors, per-shard lag), listed in operator.go. InitQueues creates the
// series of the configured queues at zero. Durations are in seconds.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/persistence"
)

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 2 * time.Second

// Source is what the scrape-time gauges read. Every method may be called
// concurrently by scrapes and must not block for long.
type Source struct {
	// Store holds the queues (Stats).
	Store persistence.QueueStore
	// Queues lists the queues to report.
	Queues func() []string
	// Shards returns how many shards of each queue this node serves.
	Shards func(ctx context.Context) (map[string]int, error)
	// Members returns how many cluster members are in each state.
	Members func() map[string]int
	// RoundTrips returns the Redis round trips and commands of the node's
	// client so far.
	RoundTrips func() (roundTrips, commands int64)
	Logger     *slog.Logger
}

// Metrics are a node's Prometheus metrics.
type Metrics struct {
	reg *prometheus.Registry

	enqueued, duplicates, processed, failed, dead, restored, leaseLosses *prometheus.CounterVec
	snoozed, discarded, expired                                          *prometheus.CounterVec
	settleRetries, repeated                                              *prometheus.CounterVec
	batch                                                                *prometheus.HistogramVec
	batchObs                                                             *obsCache // batch's observers
	op                                                                   *operator
	stuck                                                                *prometheus.GaugeVec
}

var _ orderly.Observer = (*Metrics)(nil)

// New returns a node's metrics on a new registry, with Go's process and
// runtime collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "orderly", Name: name, Help: help}, []string{"queue"})
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{
		reg:         reg,
		enqueued:    counter("jobs_enqueued_total", "Jobs enqueued through this node."),
		duplicates:  counter("jobs_duplicate_total", "Jobs enqueued through this node that were duplicates under the queue's dedup window, not stored."),
		processed:   counter("jobs_processed_total", "Ids acknowledged by this node."),
		failed:      counter("jobs_failed_total", "Ids failed on this node."),
		dead:        counter("jobs_dead_total", "Payloads this node moved to the morgue."),
		snoozed:     counter("jobs_snoozed_total", "Ids their handler snoozed on this node (back later, no failure counted)."),
		discarded:   counter("jobs_discarded_total", "Ids their handler discarded on this node (payloads dropped)."),
		expired:     counter("jobs_expired_total", "Payloads this node discarded at fetch because they expired before a handler received them."),
		restored:    counter("jobs_restored_total", "Ids put back into the queue unprocessed: a crashed owner's in-flight batch, or ids a stop cut short."),
		leaseLosses: counter("lease_losses_total", "Shard leases this node lost while holding them."),
		settleRetries: counter("settle_retries_total",
			"Settles of handled windows sent again after a failed try (Redis unreachable, a replica wait fell short); the handler is not called again."),
		repeated: counter("deliveries_repeated_total",
			"Ids handled under a lease lost before their settle committed: the next owner delivers them again."),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "orderly", Name: "batch_duration_seconds", Help: "Handler calls by outcome (ok, partial, failed).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"queue", "outcome"}),
	}
	m.stuck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "orderly", Name: "handler_stuck_seconds",
		Help: "Age of a handler call running past its deadline (it ignores its context), per shard; absent otherwise.",
	}, []string{"queue", "shard"})
	reg.MustRegister(m.batch, m.stuck)
	m.op = newOperator(reg)
	m.batchObs = &obsCache{vec: m.batch, two: true}
	return m
}

// Watch registers the scrape-time gauges read from src.
func (m *Metrics) Watch(src Source) {
	if src.Logger == nil {
		src.Logger = slog.Default()
	}
	m.reg.MustRegister(&scrape{src: src})
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry returns the registry, to add a program's own metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// BatchDone implements orderly.Observer.
func (m *Metrics) BatchDone(ref persistence.ShardRef, ids, failed int, d time.Duration, err error) {
	outcome := "ok"
	switch {
	case err != nil || (failed > 0 && failed == ids):
		outcome = "failed"
	case failed > 0:
		outcome = "partial"
	}
	m.batchObs.get(ref.Queue, outcome).Observe(d.Seconds())
}

// LeaseLost implements orderly.Observer.
func (m *Metrics) LeaseLost(ref persistence.ShardRef) {
	m.leaseLosses.WithLabelValues(ref.Queue).Inc()
}

// SettleRetried implements shard.SettleObserver.
func (m *Metrics) SettleRetried(ref persistence.ShardRef) {
	m.settleRetries.WithLabelValues(ref.Queue).Inc()
}

// WindowLost implements shard.SettleObserver.
func (m *Metrics) WindowLost(ref persistence.ShardRef, ids int) {
	m.repeated.WithLabelValues(ref.Queue).Add(float64(ids))
}

// HandlerStuck implements shard.StuckObserver: the age of a handler call
// running past its deadline, 0 once it returned.
func (m *Metrics) HandlerStuck(ref persistence.ShardRef, age time.Duration) {
	shard := strconv.Itoa(ref.Shard)
	if age <= 0 {
		m.stuck.DeleteLabelValues(ref.Queue, shard)
		return
	}
	m.stuck.WithLabelValues(ref.Queue, shard).Set(age.Seconds())
}

// Store returns s counting enqueues and settlements into m. When s can
// reshard (persistence.Resharder), so can the store returned: the node
// drives the drain of a resharded queue through it.
func (m *Metrics) Store(s persistence.Store) persistence.Store {
	c := &countingStore{Store: s, m: m}
	if rs, ok := s.(persistence.Resharder); ok {
		return &countingResharder{countingStore: c, Resharder: rs}
	}
	return c
}

// countingResharder is a countingStore on a store that reshards: the
// reshard's methods pass through uncounted.
type countingResharder struct {
	*countingStore
	persistence.Resharder
}

// countingStore counts what passes through a store. The methods it does
// not count come from the embedded store, Warm and StoreID included.
type countingStore struct {
	persistence.Store
	m *Metrics
}

func (c *countingStore) Enqueue(ctx context.Context, queue string, jobs []persistence.NewJob) error {
	err := c.Store.Enqueue(ctx, queue, jobs)
	if err == nil && len(jobs) > 0 {
		c.m.enqueued.WithLabelValues(queue).Add(float64(len(jobs)))
	}
	return err
}

// EnqueueReport implements persistence.EnqueueReporter, so that the
// duplicates of an enqueue pass through.
func (c *countingStore) EnqueueReport(ctx context.Context, queue string, jobs []persistence.NewJob) (persistence.EnqueueResult, error) {
	res, err := persistence.EnqueueReport(ctx, c.Store, queue, jobs)
	if err == nil && len(jobs) > 0 {
		c.m.enqueued.WithLabelValues(queue).Add(float64(len(jobs)))
		if res.Duplicates > 0 {
			c.m.duplicates.WithLabelValues(queue).Add(float64(res.Duplicates))
		}
	}
	return res, err
}

func (c *countingStore) Advance(ctx context.Context, l persistence.Lease, r persistence.AdvanceRequest) (persistence.AdvanceResult, error) {
	res, err := c.Store.Advance(ctx, l, r)
	if err == nil {
		q := l.Queue
		if res.Processed > 0 {
			c.m.processed.WithLabelValues(q).Add(float64(res.Processed))
		}
		if res.Failed > 0 {
			c.m.failed.WithLabelValues(q).Add(float64(res.Failed))
		}
		if len(res.Dead) > 0 {
			c.m.dead.WithLabelValues(q).Add(float64(len(res.Dead)))
		}
		if res.Snoozed > 0 {
			c.m.snoozed.WithLabelValues(q).Add(float64(res.Snoozed))
		}
		if res.Discarded > 0 {
			c.m.discarded.WithLabelValues(q).Add(float64(res.Discarded))
		}
		if res.Expired > 0 {
			c.m.expired.WithLabelValues(q).Add(float64(res.Expired))
		}
		if res.Restored > 0 {
			c.m.restored.WithLabelValues(q).Add(float64(res.Restored))
		}
	}
	return res, err
}

func (c *countingStore) AcquireShard(ctx context.Context, ref persistence.ShardRef, owner string, ttl time.Duration) (persistence.Lease, int, error) {
	l, n, err := c.Store.AcquireShard(ctx, ref, owner, ttl)
	if err == nil && n > 0 {
		c.m.restored.WithLabelValues(ref.Queue).Add(float64(n))
	}
	return l, n, err
}

// scrape collects the gauges read at scrape time.
type scrape struct{ src Source }

var (
	descShards  = prometheus.NewDesc("orderly_shards_owned", "Shards this node serves.", []string{"queue"}, nil)
	descMembers = prometheus.NewDesc("orderly_cluster_members", "Cluster members as this node sees them.", []string{"state"}, nil)
	descRT      = prometheus.NewDesc("orderly_redis_round_trips_total", "Network round trips of this node's Redis client (a pipeline is one).", nil, nil)
	descCmds    = prometheus.NewDesc("orderly_redis_commands_total", "Commands sent by this node's Redis client (a script call is one).", nil, nil)
	descUp      = prometheus.NewDesc("orderly_store_up", "1 when the last scrape could read the queues from Redis.", nil, nil)

	queueGauges = []struct {
		desc *prometheus.Desc
		kind prometheus.ValueType
		get  func(persistence.QueueStats) float64
	}{
		{qdesc("queue_length", "Queued ids (not in flight)."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return float64(s.Length) }},
		{qdesc("queue_fresh", "Queued ids that never failed."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return float64(s.Fresh) }},
		{qdesc("queue_retries", "Queued ids that failed at least once."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return float64(s.Retries) }},
		{qdesc("queue_morgue_length", "Ids in the morgue."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return float64(s.MorgueLength) }},
		{qdesc("queue_busy", "Ids in flight."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return float64(s.Busy) }},
		{qdesc("queue_lag_seconds", "Seconds since the earliest perform_at among queued ids (0 if none is due)."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return s.Lag }},
		{qdesc("queue_processed_total", "Ids acknowledged, cluster-wide, since the queue was created."), prometheus.CounterValue, func(s persistence.QueueStats) float64 { return float64(s.Processed) }},
		{qdesc("queue_failed_total", "Ids failed, cluster-wide, since the queue was created."), prometheus.CounterValue, func(s persistence.QueueStats) float64 { return float64(s.Failed) }},
		{qdesc("queue_snoozed_total", "Ids their handler snoozed, cluster-wide, since the queue was created."), prometheus.CounterValue, func(s persistence.QueueStats) float64 { return float64(s.Snoozed) }},
		{qdesc("queue_discarded_total", "Ids their handler discarded, cluster-wide, since the queue was created."), prometheus.CounterValue, func(s persistence.QueueStats) float64 { return float64(s.Discarded) }},
		{qdesc("queue_expired_total", "Payloads discarded at fetch because they expired, cluster-wide, since the queue was created."), prometheus.CounterValue, func(s persistence.QueueStats) float64 { return float64(s.Expired) }},
		{qdesc("queue_cancelled_total", "Ids a cancel disposed of while a call held them, cluster-wide."), prometheus.CounterValue, func(s persistence.QueueStats) float64 { return float64(s.Cancelled) }},
		{qdesc("queue_paused", "1 while the queue is paused cluster-wide (no handler call starts), else 0."), prometheus.GaugeValue, func(s persistence.QueueStats) float64 { return b2f(s.Paused) }},
	}
)

func qdesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("orderly_"+name, help+" Read from Redis: the same on every node.", []string{"queue"}, nil)
}

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShards, descMembers, descRT, descCmds, descUp, descShardLag, descReshardMoved, descReshardLeft} {
		ch <- d
	}
	for _, g := range queueGauges {
		ch <- g.desc
	}
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	src := s.src
	if src.RoundTrips != nil {
		rt, cmds := src.RoundTrips()
		ch <- prometheus.MustNewConstMetric(descRT, prometheus.CounterValue, float64(rt))
		ch <- prometheus.MustNewConstMetric(descCmds, prometheus.CounterValue, float64(cmds))
	}
	if src.Members != nil {
		members := src.Members()
		for _, state := range memberStates { // every state, at zero when none
			if _, ok := members[state]; !ok {
				ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, 0, state)
			}
		}
		for state, n := range members {
			ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(n), state)
		}
	}
	if src.Shards != nil {
		if owned, err := src.Shards(ctx); err == nil {
			for q, n := range owned {
				ch <- prometheus.MustNewConstMetric(descShards, prometheus.GaugeValue, float64(n), q)
			}
		}
	}
	if src.Store == nil || src.Queues == nil {
		return
	}
	up := 1.0
	stats, err := src.Store.Stats(ctx, src.Queues()...)
	if err != nil {
		up = 0
		if !errors.Is(err, context.Canceled) {
			src.Logger.Warn("metrics: cannot read queue stats", "err", err)
		}
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
	for _, st := range stats {
		for _, g := range queueGauges {
			ch <- prometheus.MustNewConstMetric(g.desc, g.kind, g.get(st), st.Name)
		}
		collectShards(ctx, src.Store, st, ch)
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
