package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderlyhq/orderly/persistence"
)

// The gauges of a queue's reshard (docs/contract.md §3.17), present only
// while one runs.
var (
	descReshardMoved = prometheus.NewDesc("orderly_reshard_moved_ids",
		"Ids whose queued jobs a running reshard moved out of the drained shards so far; absent while none runs. Read from Redis: the same on every node.",
		[]string{"queue"}, nil)
	descReshardLeft = prometheus.NewDesc("orderly_reshard_left_ids",
		"Ids still queued in the shards a running reshard drains; absent while none runs. Read from Redis: the same on every node.",
		[]string{"queue"}, nil)
)

// collectShards sends st's per-shard lag, labelled by shard number, and
// while a reshard of the queue runs, its progress. The shards of a queue
// span more numbers than its count only while a reshard runs (its two
// generations do not overlap), so the store is asked only then; the
// numbers between the generations are no shard's and are left out.
func collectShards(ctx context.Context, store persistence.QueueStore, st persistence.QueueStats, ch chan<- prometheus.Metric) {
	var shape *persistence.QueueShape
	if rs, ok := store.(persistence.Resharder); ok && (st.ShardLag == nil || len(st.ShardLag) > st.Shards) {
		if rst, err := rs.ReshardStatus(ctx, st.Name); err == nil && rst.Shape.Resharding() {
			shape = &rst.Shape
			ch <- prometheus.MustNewConstMetric(descReshardMoved, prometheus.GaugeValue, float64(rst.Moved), st.Name)
			ch <- prometheus.MustNewConstMetric(descReshardLeft, prometheus.GaugeValue, float64(rst.Left), st.Name)
		}
	}
	for i, lag := range st.ShardLag {
		shard := st.FirstShard + i
		if shape != nil && !shape.Contains(shard) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(descShardLag, prometheus.GaugeValue, lag, st.Name, shardLabel(shard))
	}
}
