package orderly_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/redistest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// BenchmarkIdleLatency measures the time from an Enqueue returning to the
// handler being called, on an idle node (woken by the enqueue notice, not by
// polling). It reports p50 and p99.
func BenchmarkIdleLatency(b *testing.B) {
	srv := redistest.NewServer(b, redistest.Options{})
	rdb := srv.Client(b)
	store, err := redisstore.New(rdb, nil)
	require.NoError(b, err)
	got := make(chan time.Time, 1)
	node, err := orderly.NewNode(store, &orderly.Config{Name: "bench", Logger: testLogger(b), Workers: []orderly.Worker{{
		Queue: "q",
		Handler: func(ctx context.Context, batch *orderly.Batch) error {
			got <- time.Now()
			return nil
		},
	}}})
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, node.Start(ctx))
	defer node.Stop(ctx)
	require.Eventually(b, func() bool { return node.Ready(ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	c, err := client.New(rdb, nil)
	require.NoError(b, err)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		time.Sleep(5 * time.Millisecond) // let the node go idle
		require.NoError(b, c.Enqueue(ctx, "q", client.Job{ID: strconv.Itoa(i)}))
		sent := time.Now()
		at := <-got
		lat = append(lat, at.Sub(sent))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}
