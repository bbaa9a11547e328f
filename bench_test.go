package orderly_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
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

// BenchmarkNodeHotPath drains b.N blank jobs, enqueued beforehand, through
// one node with Lowkiq's settings (5 shards, batch 1, concurrency 5, the
// default prefetch) and a handler that does nothing: the node's cost per job
// on its hot path (fetch, handler call, settle). It reports, per job, the
// process's heap allocations and CPU time (the node, nothing else runs
// meanwhile), Redis's CPU time and script time, commands (INFO
// commandstats, commands inside scripts included) and the client's round
// trips and commands. Run it with -benchtime 100000x; -cpuprofile and
// -memprofile show where the node's share goes. Its cases: window=adaptive
// (the defaults: windows of 10 ids growing to 100 while the shard is busy)
// and window=10 (Prefetch 10 set by hand: fixed windows, as before
// MaxPrefetch existed).
func BenchmarkNodeHotPath(b *testing.B) {
	b.Run("window=adaptive", func(b *testing.B) { benchNodeHotPath(b, 0) })
	b.Run("window=10", func(b *testing.B) { benchNodeHotPath(b, 10) })
}

func benchNodeHotPath(b *testing.B, prefetch int) {
	srv := redistest.NewServer(b, redistest.Options{})
	rdb := srv.Client(b)
	admin := srv.Client(b)
	store, err := redisstore.New(rdb, nil)
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, store.RegisterQueue(ctx, persistence.QueueSpec{Name: "bench", Shards: 5}))
	for start := 0; start < b.N; start += 1000 {
		jobs := make([]persistence.NewJob, min(1000, b.N-start))
		for i := range jobs {
			jobs[i] = persistence.NewJob{ID: "job-" + strconv.Itoa(start+i)}
		}
		require.NoError(b, store.Enqueue(ctx, "bench", jobs))
	}
	var done atomic.Int64
	all := make(chan struct{})
	node, err := orderly.NewNode(store, &orderly.Config{Name: "bench", Logger: testLogger(b), Concurrency: 5, Workers: []orderly.Worker{{
		Queue: "bench", Shards: 5, BatchSize: 1, Prefetch: prefetch,
		Handler: func(_ context.Context, batch *orderly.Batch) error {
			if done.Add(int64(len(batch.Jobs))) == int64(b.N) {
				close(all)
			}
			return nil
		},
	}}})
	require.NoError(b, err)

	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	u0, err := redisserver.ReadUsage(ctx, admin)
	require.NoError(b, err)
	c0, cpu0 := store.Counters(), processCPU()
	b.ResetTimer()
	start := time.Now()
	require.NoError(b, node.Start(ctx))
	<-all
	elapsed := time.Since(start)
	b.StopTimer()
	cpu1, c1 := processCPU(), store.Counters()
	runtime.ReadMemStats(&m1)
	u1, err := redisserver.ReadUsage(ctx, admin)
	require.NoError(b, err)
	require.NoError(b, node.Stop(ctx))

	n := float64(b.N)
	u, c := u1.Sub(u0), c1.Sub(c0)
	b.ReportMetric(n/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "node-allocs/job")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "node-B/job")
	b.ReportMetric(float64(cpu1-cpu0)/n/1e3, "node-cpu-us/job")
	b.ReportMetric(u.CPUSeconds*1e6/n, "redis-cpu-us/job")
	b.ReportMetric(float64(u.ScriptMicros)/n, "lua-us/job")
	b.ReportMetric(float64(u.Commands)/n, "rediscmds/job")
	b.ReportMetric(float64(c.RoundTrips)/n, "roundtrips/job")
	b.ReportMetric(float64(c.Commands)/n, "clientcmds/job")
	b.ReportMetric(0, "ns/op")
}

// processCPU returns the CPU time (user + system) the process used, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
