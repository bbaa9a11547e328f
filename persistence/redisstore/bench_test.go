package redisstore_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// The benchmarks run layout 1 (the previous release's scripts, through the
// test-only v1Store) and layout 2 side by side, each on a redis-server of
// its own, and report per job: jobs/s, round trips, commands Redis ran
// (scripts' inner commands included), microseconds of Redis time spent in
// scripts (lua-us/job) and Redis CPU (redis-cpu-us/job).
//
//	go test -run '^$' -bench . -benchtime 100000x ./persistence/redisstore
//	go test -run '^$' -bench Memory -benchtime 1x ./persistence/redisstore -args -memjobs 1000000

var memJobs = flag.Int("memjobs", 10_000, "queued jobs BenchmarkMemory fills each layout with (1000000 for the documented figures)")

// roundTrips is a go-redis hook that counts round trips, for both layouts.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// benchEnv is one layout on a fresh server.
type benchEnv struct {
	b     *testing.B
	store persistence.Store
	admin *redis.Client // INFO, uncounted
	rt    *roundTrips
}

var layouts = []string{"1", "2"}

func newBenchEnv(b *testing.B, layout string, shards int) *benchEnv {
	srv := redistest.NewServer(b, redistest.Options{})
	c := srv.Client(b)
	rt := &roundTrips{}
	c.AddHook(rt)
	e := &benchEnv{b: b, admin: srv.Client(b), rt: rt}
	ctx := context.Background()
	if layout == "1" {
		e.store = newV1Store(c, redisstore.DefaultPrefix, nil)
	} else {
		s, err := redisstore.New(c, nil)
		require.NoError(b, err)
		e.store = s
	}
	require.NoError(b, e.store.RegisterQueue(ctx, persistence.QueueSpec{Name: "bench", Shards: shards}))
	return e
}

func (e *benchEnv) usage() redisserver.Usage {
	u, err := redisserver.ReadUsage(context.Background(), e.admin)
	require.NoError(e.b, err)
	return u
}

// meter measures a stretch of work.
type meter struct {
	e      *benchEnv
	start  time.Time
	rt     int64
	before redisserver.Usage
}

func (e *benchEnv) startMeter() *meter {
	m := &meter{e: e, before: e.usage(), rt: e.rt.n.Load()}
	e.b.ResetTimer()
	m.start = time.Now()
	return m
}

func (m *meter) report(jobs int) {
	elapsed := time.Since(m.start)
	m.e.b.StopTimer()
	u := m.e.usage().Sub(m.before)
	rt := m.e.rt.n.Load() - m.rt
	n := float64(jobs)
	m.e.b.ReportMetric(n/elapsed.Seconds(), "jobs/s")
	m.e.b.ReportMetric(float64(rt)/n, "roundtrips/job")
	m.e.b.ReportMetric(float64(u.Commands)/n, "rediscmds/job")
	m.e.b.ReportMetric(float64(u.ScriptMicros)/n, "lua-us/job")
	m.e.b.ReportMetric(u.CPUSeconds*1e6/n, "redis-cpu-us/job")
	m.e.b.ReportMetric(0, "ns/op")
}

func blankJobs(from, n int) []persistence.NewJob {
	jobs := make([]persistence.NewJob, n)
	for i := range jobs {
		jobs[i] = persistence.NewJob{ID: "job-" + strconv.Itoa(from+i)}
	}
	return jobs
}

// fill enqueues n blank jobs in calls of 1000.
func (e *benchEnv) fill(n int) {
	ctx := context.Background()
	for start := 0; start < n; start += 1000 {
		require.NoError(e.b, e.store.Enqueue(ctx, "bench", blankJobs(start, min(1000, n-start))))
	}
}

// BenchmarkEnqueue enqueues blank jobs in calls of 1000 into a queue of 5
// shards: one pipeline (one round trip) per call.
func BenchmarkEnqueue(b *testing.B) {
	for _, l := range layouts {
		b.Run("layout="+l, func(b *testing.B) {
			e := newBenchEnv(b, l, 5)
			n := max(b.N, 1000)
			b.ReportAllocs()
			m := e.startMeter()
			e.fill(n)
			m.report(n)
		})
	}
}

// BenchmarkProcess fetches and acknowledges a pre-filled shard at batch
// sizes 1, 10 and 100: one Advance (one round trip) per batch.
func BenchmarkProcess(b *testing.B) {
	for _, l := range layouts {
		for _, size := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("layout=%s/batch=%d", l, size), func(b *testing.B) {
				benchProcess(b, l, size, 0)
			})
		}
	}
}

// BenchmarkProcessRetained is BenchmarkProcess with retain_finished on
// (docs/contract.md §3.14): each acknowledged id leaves a finished record;
// the difference is the cost of retention per job.
func BenchmarkProcessRetained(b *testing.B) {
	for _, size := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("layout=2/batch=%d", size), func(b *testing.B) {
			benchProcess(b, "2", size, time.Hour)
		})
	}
}

func benchProcess(b *testing.B, l string, size int, retain time.Duration) {
	e := newBenchEnv(b, l, 1)
	ctx := context.Background()
	n := max(b.N, size)
	e.fill(n)
	lease, _, err := e.store.AcquireShard(ctx, persistence.ShardRef{Queue: "bench"}, "bench", time.Minute)
	require.NoError(b, err)
	b.ReportAllocs()
	m := e.startMeter()
	var settle, seq int64
	done := 0
	for {
		seq++
		res, err := e.store.Advance(ctx, lease, persistence.AdvanceRequest{Settle: settle, Fetch: size, NextSeq: seq, MaxRetryCount: 25,
			RetainFinished: retain})
		require.NoError(b, err)
		done += res.Processed
		if res.Batch == nil {
			break
		}
		settle = res.Batch.Seq
	}
	m.report(done)
	require.Equal(b, n, done)
}

// BenchmarkMemory fills each layout with -memjobs blank jobs (ids "job-N",
// the empty payload, default score and perform_at) and reports Redis memory
// (INFO used_memory) per queued job; then per extra payload of an id, with
// ids of 10 small payloads (inline in layout 2) and one id of 10,000
// (layout 2's overflow); then per delayed job (due in an hour).
func BenchmarkMemory(b *testing.B) {
	for _, l := range layouts {
		b.Run("layout="+l, func(b *testing.B) {
			ctx := context.Background()
			measure := func(fill func(*benchEnv) int) float64 {
				e := newBenchEnv(b, l, 1)
				before := e.usage().MemoryBytes
				n := fill(e)
				return float64(e.usage().MemoryBytes-before) / float64(n)
			}
			enqueue := func(e *benchEnv, jobs []persistence.NewJob) {
				for start := 0; start < len(jobs); start += 1000 {
					require.NoError(b, e.store.Enqueue(ctx, "bench", jobs[start:min(start+1000, len(jobs))]))
				}
			}
			b.ResetTimer()
			perJob := measure(func(e *benchEnv) int { e.fill(*memJobs); return *memJobs })
			ids := max(*memJobs/10, 100)
			one := measure(func(e *benchEnv) int { e.fill(ids); return ids })
			ten := measure(func(e *benchEnv) int {
				var jobs []persistence.NewJob
				for i := range ids {
					for k := range 10 {
						sc := float64(k)
						jobs = append(jobs, persistence.NewJob{ID: "job-" + strconv.Itoa(i), Payload: []byte("p-" + strconv.Itoa(k)), Score: &sc})
					}
				}
				enqueue(e, jobs)
				return ids
			})
			whale := measure(func(e *benchEnv) int {
				var jobs []persistence.NewJob
				for k := range 10_000 {
					sc := float64(k)
					jobs = append(jobs, persistence.NewJob{ID: "whale", Payload: []byte("p-" + strconv.Itoa(k)), Score: &sc})
				}
				enqueue(e, jobs)
				return 10_000
			})
			uuids := measure(func(e *benchEnv) int {
				jobs := make([]persistence.NewJob, *memJobs)
				for i := range jobs {
					// The shape and length of a UUID (36 characters).
					jobs[i] = persistence.NewJob{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)}
				}
				enqueue(e, jobs)
				return *memJobs
			})
			delayed := measure(func(e *benchEnv) int {
				jobs := blankJobs(0, *memJobs)
				for i := range jobs {
					jobs[i].PerformAt = time.Now().Add(time.Hour)
				}
				enqueue(e, jobs)
				return *memJobs
			})
			if l == "2" {
				// One small header per job (docs/contract.md §10); layout 1
				// keeps none.
				withHeader := measure(func(e *benchEnv) int {
					jobs := blankJobs(0, *memJobs)
					for i := range jobs {
						jobs[i].Headers = map[string]string{"tenant": "acme"}
					}
					enqueue(e, jobs)
					return *memJobs
				})
				b.ReportMetric(withHeader, "B/queued-job-1-header")
			}
			b.StopTimer()
			b.ReportMetric(perJob, "B/queued-job")
			b.ReportMetric(uuids, "B/queued-job-uuid-id")
			b.ReportMetric((ten-one)/9, "B/extra-payload")
			b.ReportMetric(whale, "B/payload-of-10k-id")
			b.ReportMetric(delayed, "B/delayed-job")
			b.ReportMetric(0, "ns/op")
		})
	}
}

var hotPayloads = flag.Int("hotpayloads", 20_000, "payloads of the one id BenchmarkHotID drains (500000 for the documented figures)")

// BenchmarkHotID enqueues -hotpayloads payloads for one id and drains it
// (fetch 10 ids per call, every call acknowledged), and reports the longest
// script call of each phase as Redis's SLOWLOG timed it: no call may walk
// the id's whole payload set.
func BenchmarkHotID(b *testing.B) {
	for _, l := range layouts {
		b.Run("layout="+l, func(b *testing.B) {
			e := newBenchEnv(b, l, 1)
			ctx := context.Background()
			require.NoError(b, e.admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
			require.NoError(b, e.admin.ConfigSet(ctx, "slowlog-max-len", "1000000").Err())
			// longest returns the median and the longest script call since
			// the last look (SLOWLOG times each call; on a busy machine the
			// longest also holds the time the server waited for a core).
			longest := func() (time.Duration, time.Duration) {
				logs, err := e.admin.SlowLogGet(ctx, -1).Result()
				require.NoError(b, err)
				var ds []time.Duration
				for _, s := range logs {
					if len(s.Args) > 0 && strings.EqualFold(s.Args[0], "evalsha") {
						ds = append(ds, s.Duration)
					}
				}
				require.NoError(b, e.admin.SlowLogReset(ctx).Err())
				if len(ds) == 0 {
					return 0, 0
				}
				slices.Sort(ds)
				return ds[len(ds)/2], ds[len(ds)-1]
			}
			longest()
			b.ResetTimer()
			jobs := make([]persistence.NewJob, 0, 1000)
			for k := range *hotPayloads {
				sc := float64(k)
				jobs = append(jobs, persistence.NewJob{ID: "whale", Payload: []byte("p-" + strconv.Itoa(k)), Score: &sc})
				if len(jobs) == 1000 || k == *hotPayloads-1 {
					require.NoError(b, e.store.Enqueue(ctx, "bench", jobs))
					jobs = jobs[:0]
				}
			}
			enqMed, enqMax := longest()
			lease, _, err := e.store.AcquireShard(ctx, persistence.ShardRef{Queue: "bench"}, "bench", time.Minute)
			require.NoError(b, err)
			var settle, seq int64
			for {
				seq++
				res, err := e.store.Advance(ctx, lease, persistence.AdvanceRequest{Settle: settle, Fetch: 10, NextSeq: seq, MaxRetryCount: 25})
				require.NoError(b, err)
				if res.Batch == nil {
					break
				}
				settle = res.Batch.Seq
			}
			advMed, advMax := longest()
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(enqMed), "median-enqueue-ms")
			b.ReportMetric(ms(enqMax), "max-enqueue-ms")
			b.ReportMetric(ms(advMed), "median-advance-ms")
			b.ReportMetric(ms(advMax), "max-advance-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkList times the first page (100 jobs) of each listing order over
// -memjobs queued jobs in 5 shards, layout 2: by perform_at and by retry
// count read indexes; by id reads the records hash in bounded chunks.
func BenchmarkList(b *testing.B) {
	e := newBenchEnv(b, "2", 5)
	e.fill(*memJobs)
	ctx := context.Background()
	for _, order := range []persistence.Order{persistence.OrderPerformAt, persistence.OrderRetryCount, persistence.OrderID} {
		b.Run("order="+string(order), func(b *testing.B) {
			before := e.usage()
			start := time.Now()
			for range b.N {
				page, err := e.store.ListJobs(ctx, "bench", persistence.ListOptions{Order: order, Limit: 100})
				require.NoError(b, err)
				require.Len(b, page.Jobs, 100)
			}
			u := e.usage().Sub(before)
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(u.CPUSeconds*1000/float64(b.N), "redis-cpu-ms/page")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkProcessStateful is BenchmarkProcess (layout 2, windows of 10)
// on a stateful queue, plain and with every id setting a 64-byte state:
// the cost of reading and committing state with the ack; with the change
// feed on (the relay included); and a queue that is not stateful whose
// every id emits one 64-byte job into another queue (the relay included).
func BenchmarkProcessStateful(b *testing.B) {
	state := []byte(strings.Repeat("s", 64))
	for _, mode := range []string{"plain", "stateful", "stateful+write", "stateful+write+feed", "emit"} {
		b.Run("mode="+mode, func(b *testing.B) {
			e := newBenchEnv(b, "2", 1)
			ctx := context.Background()
			const size = 10
			n := max(b.N, size)
			e.fill(n)
			lease, _, err := e.store.AcquireShard(ctx, persistence.ShardRef{Queue: "bench"}, "bench", time.Minute)
			require.NoError(b, err)
			require.NoError(b, e.store.RegisterQueue(ctx, persistence.QueueSpec{Name: "bench-out", Shards: 1}))
			feed := 0
			if mode == "stateful+write+feed" {
				feed = 10000
			}
			b.ReportAllocs()
			m := e.startMeter()
			var settle, seq int64
			var writes []persistence.StateWrite
			var emits []persistence.Emit
			done := 0
			for {
				seq++
				res, err := e.store.Advance(ctx, lease, persistence.AdvanceRequest{Settle: settle, Fetch: size, NextSeq: seq, MaxRetryCount: 25,
					Stateful: mode != "plain" && mode != "emit", StateWrites: writes, Emits: emits, FeedMaxLen: feed})
				require.NoError(b, err)
				if res.Outbox > 0 {
					_, _, _, err := e.store.RelayOutbox(ctx, lease.ShardRef, 0)
					require.NoError(b, err)
				}
				done += res.Processed
				if res.Batch == nil {
					break
				}
				settle = res.Batch.Seq
				writes, emits = writes[:0], emits[:0]
				for _, j := range res.Batch.Jobs {
					switch mode {
					case "stateful+write", "stateful+write+feed":
						writes = append(writes, persistence.StateWrite{ID: j.ID, Data: state})
					case "emit":
						emits = append(emits, persistence.Emit{From: j.ID, Queue: "bench-out", Job: persistence.NewJob{ID: j.ID, Payload: state}})
					}
				}
			}
			m.report(done)
			require.Equal(b, n, done)
		})
	}
}

var (
	growthSizes = flag.String("growth", "10000,100000", "queued blank jobs BenchmarkGrowth measures at, comma-separated (10000,100000,1000000,10000000 for the documented figures)")
	growthDrain = flag.Int("growthdrain", 100_000, "jobs BenchmarkGrowth drains at each size (at most the size)")
)

// BenchmarkGrowth fills layout 2 with each -growth number of blank jobs (5
// shards, a fresh server each) and reports Redis memory per queued job
// (INFO used_memory), then drains -growthdrain of them in windows of 10 (the
// node's default prefetch), the shards in turn, and reports jobs/s, Redis
// CPU and script time per job while that many are queued. Memory should be
// linear and the drain flat in the number queued.
//
//	go test -run '^$' -bench Growth -benchtime 1x -timeout 30m ./persistence/redisstore -args -growth 10000,100000,1000000,10000000
func BenchmarkGrowth(b *testing.B) {
	for _, f := range strings.Split(*growthSizes, ",") {
		size, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "-growth")
		b.Run(fmt.Sprintf("queued=%d", size), func(b *testing.B) {
			const shards = 5
			e := newBenchEnv(b, "2", shards)
			ctx := context.Background()
			before := e.usage().MemoryBytes
			e.fill(size)
			perJob := float64(e.usage().MemoryBytes-before) / float64(size)
			leases := make([]persistence.Lease, shards)
			for s := range shards {
				leases[s], _, err = e.store.AcquireShard(ctx, persistence.ShardRef{Queue: "bench", Shard: s}, "bench", time.Hour)
				require.NoError(b, err)
			}
			want := min(*growthDrain, size)
			settle, seq := make([]int64, shards), make([]int64, shards)
			m := e.startMeter()
			done := 0
			for s := 0; done < want; s = (s + 1) % shards {
				seq[s]++
				res, err := e.store.Advance(ctx, leases[s], persistence.AdvanceRequest{Settle: settle[s], Fetch: 10, NextSeq: seq[s], MaxRetryCount: 25})
				require.NoError(b, err)
				done += res.Processed
				settle[s] = 0
				if res.Batch != nil {
					settle[s] = res.Batch.Seq
				}
			}
			m.report(done)
			b.ReportMetric(perJob, "B/queued-job")
		})
	}
}

// BenchmarkEnqueueDedup measures what a dedup key costs an enqueue
// (docs/contract.md §3.12) side by side with the same jobs without one, in
// calls of 1 and of 100 jobs into a queue of 5 shards (layout 2): "plain"
// has no key, "key-window-off" keys on a queue without a window, "key"
// fresh keys on a queue with a window, "key-dup" keys seen before (every
// job a duplicate). ns/job is the wall time per job.
//
//	go test -run '^$' -bench EnqueueDedup -benchtime 20000x ./persistence/redisstore
func BenchmarkEnqueueDedup(b *testing.B) {
	for _, per := range []int{1, 100} {
		for _, v := range []string{"plain", "key-window-off", "key", "key-dup"} {
			b.Run(fmt.Sprintf("call=%d/%s", per, v), func(b *testing.B) {
				e := newBenchEnv(b, "2", 5)
				ctx := context.Background()
				if v != "key-window-off" {
					require.NoError(b, e.store.RegisterQueue(ctx, persistence.QueueSpec{Name: "bench", Shards: 5, DedupWindow: time.Hour}))
				}
				n := max(b.N, per)
				calls := make([][]persistence.NewJob, 0, n/per+1)
				for start := 0; start < n; start += per {
					jobs := blankJobs(start, min(per, n-start))
					for i := range jobs {
						if v != "plain" {
							jobs[i].DedupKey = "key-" + jobs[i].ID
						}
					}
					calls = append(calls, jobs)
				}
				if v == "key-dup" {
					for _, jobs := range calls {
						require.NoError(b, e.store.Enqueue(ctx, "bench", jobs))
					}
				}
				b.ReportAllocs()
				m := e.startMeter()
				for _, jobs := range calls {
					require.NoError(b, e.store.Enqueue(ctx, "bench", jobs))
				}
				b.ReportMetric(float64(time.Since(m.start).Nanoseconds())/float64(n), "ns/job")
				m.report(n)
			})
		}
	}
}

var reshardJobs = flag.Int("reshard-jobs", 100_000, "queued blank jobs BenchmarkReshard moves")

// BenchmarkReshard moves -reshard-jobs queued blank jobs (one per id) from 8
// shards to 16, each old shard drained by an owner of its own at once, as
// the nodes of a cluster do (steps of 200 ids, actors/shard's
// drainStepIDs): jobs/s is ids moved per second of the whole reshard; the
// per-job figures are what moving one id costs (docs/storage.md section
// 11).
func BenchmarkReshard(b *testing.B) {
	for range b.N {
		e := newBenchEnv(b, "2", 8)
		rs := e.store.(persistence.Resharder)
		ctx := context.Background()
		e.fill(*reshardJobs)
		m := e.startMeter()
		sh, err := rs.Reshard(ctx, "bench", 16)
		require.NoError(b, err)
		refs := sh.From.Refs("bench")
		errs := make(chan error, len(refs))
		for _, ref := range refs {
			go func() { errs <- drainOne(ctx, e.store, rs, ref) }()
		}
		for range refs {
			require.NoError(b, <-errs)
		}
		done, err := rs.FinishReshard(ctx, "bench")
		require.NoError(b, err)
		require.True(b, done)
		m.report(*reshardJobs)
	}
}

// drainOne drains one shard as its owner does.
func drainOne(ctx context.Context, s persistence.Store, rs persistence.Resharder, ref persistence.ShardRef) error {
	lease, _, err := s.AcquireShard(ctx, ref, "bench", time.Minute)
	if err != nil {
		return err
	}
	if _, err := s.Advance(ctx, lease, persistence.AdvanceRequest{NextSeq: 1, MaxRetryCount: 25}); err != nil {
		return err
	}
	for {
		r, err := rs.DrainShard(ctx, lease, 200)
		if err != nil || r.Done {
			return err
		}
	}
}
