package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderlyhq/orderly/pull"
)

// WatchPull registers the gauges of the pull queues, read from stats at
// each scrape (pull.Broker.Stats): orderly_pull_waiting_workers{queue},
// the pulls waiting for a batch, and orderly_pull_held_leases{queue}, the
// batches workers hold. stats must not block for long.
func (m *Metrics) WatchPull(stats func() map[string]pull.Stats) {
	m.reg.MustRegister(&pullCollector{stats: stats})
}

var (
	pullWaitingDesc = prometheus.NewDesc("orderly_pull_waiting_workers",
		"Pull requests waiting for a batch of the queue on this node.", []string{"queue"}, nil)
	pullHeldDesc = prometheus.NewDesc("orderly_pull_held_leases",
		"Batches of the queue held by pull workers under a lease on this node.", []string{"queue"}, nil)
)

// pullCollector reports the pull gauges.
type pullCollector struct{ stats func() map[string]pull.Stats }

func (c *pullCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pullWaitingDesc
	ch <- pullHeldDesc
}

func (c *pullCollector) Collect(ch chan<- prometheus.Metric) {
	for q, s := range c.stats() {
		ch <- prometheus.MustNewConstMetric(pullWaitingDesc, prometheus.GaugeValue, float64(s.Waiting), q)
		ch <- prometheus.MustNewConstMetric(pullHeldDesc, prometheus.GaugeValue, float64(s.Held), q)
	}
}
