package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// serverCommands returns the commands Redis ran so far (inside scripts too).
func serverCommands(b *testing.B, c *redis.Client) int64 {
	u, err := redisserver.ReadUsage(context.Background(), c)
	require.NoError(b, err)
	return u.Commands
}

type meter struct {
	b      *testing.B
	s      *redisstore.Store
	c      *redis.Client
	start  time.Time
	before redisstore.Counters
	cmds   int64
}

func startMeter(b *testing.B, s *redisstore.Store, c *redis.Client) *meter {
	m := &meter{b: b, s: s, c: c}
	m.cmds = serverCommands(b, c)
	m.before = s.Counters()
	b.ResetTimer()
	m.start = time.Now()
	return m
}

func (m *meter) report(jobs int) {
	elapsed := time.Since(m.start)
	m.b.StopTimer()
	d := m.s.Counters().Sub(m.before)
	cmds := serverCommands(m.b, m.c) - m.cmds
	m.b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	m.b.ReportMetric(float64(d.RoundTrips)/float64(jobs), "roundtrips/job")
	m.b.ReportMetric(float64(cmds)/float64(jobs), "rediscmds/job")
	m.b.ReportMetric(0, "ns/op")
}

func benchStore(b *testing.B, shards int) (*redisstore.Store, *redis.Client) {
	srv := redistest.NewServer(b, redistest.Options{})
	c := srv.Client(b)
	s, err := redisstore.New(c, nil)
	require.NoError(b, err)
	require.NoError(b, s.RegisterQueue(context.Background(), persistence.QueueSpec{Name: "bench", Shards: shards}))
	require.NoError(b, s.LoadScripts(context.Background()))
	return s, c
}

func blankJobs(from, n int) []persistence.NewJob {
	jobs := make([]persistence.NewJob, n)
	for i := range jobs {
		jobs[i] = persistence.NewJob{ID: "job-" + strconv.Itoa(from+i)}
	}
	return jobs
}

// BenchmarkEnqueue enqueues blank jobs in batches of 1000 into a queue of 5
// shards: one pipeline (one round trip) per batch.
func BenchmarkEnqueue(b *testing.B) {
	s, c := benchStore(b, 5)
	ctx := context.Background()
	const batch = 1000
	n := max(b.N, batch)
	jobs := blankJobs(0, n)
	b.ReportAllocs()
	m := startMeter(b, s, c)
	for start := 0; start < n; start += batch {
		require.NoError(b, s.Enqueue(ctx, "bench", jobs[start:min(start+batch, n)]))
	}
	m.report(n)
}

// BenchmarkProcess fetches and acknowledges a pre-filled shard at batch
// sizes 1, 10 and 100: one Advance call (one round trip) per batch.
func BenchmarkProcess(b *testing.B) {
	for _, size := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, c := benchStore(b, 1)
			ctx := context.Background()
			n := max(b.N, size)
			for start := 0; start < n; start += 10000 {
				require.NoError(b, s.Enqueue(ctx, "bench", blankJobs(start, min(10000, n-start))))
			}
			lease, _, err := s.AcquireShard(ctx, persistence.ShardRef{Queue: "bench"}, "bench", time.Minute)
			require.NoError(b, err)
			b.ReportAllocs()
			m := startMeter(b, s, c)
			var settle, seq int64
			done := 0
			for {
				seq++
				res, err := s.Advance(ctx, lease, persistence.AdvanceRequest{Settle: settle, Fetch: size, NextSeq: seq, MaxRetryCount: 25})
				require.NoError(b, err)
				done += res.Processed
				if res.Batch == nil {
					break
				}
				settle = res.Batch.Seq
			}
			m.report(done)
			require.Equal(b, n, done)
		})
	}
}
