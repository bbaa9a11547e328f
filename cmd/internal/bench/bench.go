// Package bench measures Orderly and audits what it did: Lowkiq's benchmark
// (enqueue N blank jobs, then process them with concurrency 5 on 5 shards at
// batch size 1) and variants, an idle-latency run, and a failover run that
// kills a node process under load, and idle runs that measure what a node
// serving many shards costs while nothing happens. Every run records what the handlers got
// and checks, per id, that no two calls overlapped, that payloads came in
// score order, and that nothing was lost or delivered twice beyond a crash's
// redelivery. `orderly bench` runs it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

// Defaults of Config.
const (
	DefaultJobs = 100_000
	DefaultIdle = time.Minute
)

// Config configures a benchmark run.
type Config struct {
	// Redis is the server's URL; empty starts a throwaway redis-server.
	Redis string
	// Jobs is the number of jobs of the throughput scenarios [DefaultJobs].
	Jobs int
	// Idle is how long the idle scenarios measure [DefaultIdle].
	Idle time.Duration
	// Scenarios to run, by name [lowkiq]; "all" runs every one.
	Scenarios []string
	// NodeBinary is the orderly binary, for the scenarios that run node
	// processes [the running executable].
	NodeBinary string
	// Progress receives a progress line (nil: none).
	Progress io.Writer
	// Logger receives the nodes' warnings [discard].
	Logger *slog.Logger
}

// Result is the outcome of one scenario.
type Result struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	Jobs        int    `json:"jobs"`
	IDs         int    `json:"ids"`
	Nodes       int    `json:"nodes"`
	Shards      int    `json:"shards"`
	BatchSize   int    `json:"batch_size"`
	Prefetch    int    `json:"prefetch"`
	Concurrency int    `json:"concurrency"`

	EnqueuePerSec float64 `json:"enqueue_jobs_per_sec,omitempty"`
	EnqueueSec    float64 `json:"enqueue_seconds,omitempty"`
	ProcessPerSec float64 `json:"process_jobs_per_sec,omitempty"`
	// WallSec is the time from starting the nodes to an empty queue.
	WallSec float64 `json:"wall_seconds,omitempty"`
	// LatencyP50Ms and LatencyP99Ms are enqueue-to-handler latencies.
	LatencyP50Ms float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99Ms float64 `json:"latency_p99_ms,omitempty"`
	// RoundTripsPerJob counts the nodes' Redis round trips while
	// processing (a script call is one); RedisCmdsPerJob the commands Redis
	// ran (INFO commandstats, commands inside scripts included).
	RoundTripsPerJob float64 `json:"round_trips_per_job,omitempty"`
	RedisCmdsPerJob  float64 `json:"redis_commands_per_job,omitempty"`
	// CPUSec is the CPU time of the nodes' process while processing;
	// RedisCPUSec Redis's.
	CPUSec      float64 `json:"cpu_seconds,omitempty"`
	RedisCPUSec float64 `json:"redis_cpu_seconds,omitempty"`
	// RedisCPUByMaster is RedisCPUSec of each master of a Redis Cluster,
	// by address, so that the load of the busiest one shows.
	RedisCPUByMaster map[string]float64 `json:"redis_cpu_seconds_by_master,omitempty"`
	// CPUPerJobMicros is CPUSec + RedisCPUSec per job, in microseconds
	// (the webhook scenarios' receiver included).
	CPUPerJobMicros float64 `json:"cpu_per_job_us,omitempty"`
	// Calls counts handler calls (webhook requests in the webhook
	// scenarios).
	Calls     int     `json:"calls,omitempty"`
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty"`
	// FailoverSec is the time from SIGKILL until every shard of the killed
	// node was held by another.
	FailoverSec float64 `json:"failover_seconds,omitempty"`
	// Queues counts the queues the node serves (idle scenarios; Shards is
	// per queue).
	Queues int `json:"queues,omitempty"`
	// IdleSec is how long an idle scenario measured; RoundTripsPerMin
	// counts the node's Redis round trips per minute meanwhile,
	// NodeCmdsPerMin the commands its client sent (a script call is one),
	// RedisCmdsPerMin the commands Redis ran per minute (INFO commandstats,
	// commands inside scripts included), CPUPercent and RedisCPUPercent the
	// CPU time of the node's process and of Redis per wall time, in percent
	// of one core.
	IdleSec          float64 `json:"idle_seconds,omitempty"`
	RoundTripsPerMin float64 `json:"round_trips_per_min,omitempty"`
	NodeCmdsPerMin   float64 `json:"node_commands_per_min,omitempty"`
	RedisCmdsPerMin  float64 `json:"redis_commands_per_min,omitempty"`
	CPUPercent       float64 `json:"cpu_percent,omitempty"`
	RedisCPUPercent  float64 `json:"redis_cpu_percent,omitempty"`
	Audit            Audit   `json:"audit"`
}

// Audit is what the run's history showed.
type Audit struct {
	OK              bool     `json:"ok"`
	Calls           int      `json:"calls"`
	Acked           int      `json:"payloads_acknowledged"`
	Duplicates      int      `json:"duplicates"`
	Overlaps        int      `json:"overlaps"`
	OrderViolations int      `json:"order_violations"`
	Lost            int      `json:"lost"`
	Breaches        []string `json:"breaches,omitempty"`
}

// ErrAudit is returned when a run's history breaks an invariant.
var ErrAudit = errors.New("bench: an invariant broke")

// scenario describes one run.
type scenario struct {
	name, desc  string
	kind        string // throughput, latency, failover, idle
	queues      int    // queues of the idle scenarios (0: one)
	shards      int    // per queue
	batch       int
	prefetch    int // 0: the worker's default
	concurrency int
	nodes       int
	payload     int           // bytes per payload
	perID       int           // payloads per id (merge-heavy when > 1)
	delay       time.Duration // perform_at spread over [0, delay)
	jobs        float64       // fraction of Config.Jobs
	// topology, when set, runs the scenario on a Redis of its own instead
	// of Config.Redis: "cluster1" and "cluster3" (a Redis Cluster of 1 or
	// 3 masters), "replica" (a master with one replica).
	topology   string
	durability string // the store's durability mode [async]
	// webhook hands the jobs to an http handler (package webhook) that
	// posts them to a minimal Go receiver in the same process.
	webhook bool
	// pull serves the jobs to a Go pull worker (client.PullWorker) over
	// the HTTP API in the same process.
	pull bool
	// pullMax is the pull worker's max_ids and pullLoops its loops
	// [the batch size; the concurrency].
	pullMax, pullLoops int
}

// concurrentCalls is the worker's ConcurrentCalls: a pull queue's default
// (every call of a window at once) for the pull scenarios, else 1.
func (sc scenario) concurrentCalls() int {
	if sc.pull {
		return persistence.MaxBatchSize
	}
	return 0
}

var scenarios = []scenario{
	{name: "lowkiq", desc: "Lowkiq's benchmark: N blank jobs, 5 shards, batch 1, concurrency 5 (default window: 10 ids per fetch, growing to 100 while busy)", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 1, jobs: 1},
	{name: "lowkiq-w10", desc: "as lowkiq with prefetch 10 set by hand: a fixed window of 10 ids per fetch", kind: "throughput", shards: 5, batch: 1, prefetch: 10, concurrency: 5, nodes: 1, jobs: 1},
	{name: "lowkiq-p1", desc: "as lowkiq with prefetch 1: one round trip per job, as Lowkiq does", kind: "throughput", shards: 5, batch: 1, prefetch: 1, concurrency: 5, nodes: 1, jobs: 1},
	{name: "batch10", desc: "as lowkiq, batch size 10", kind: "throughput", shards: 5, batch: 10, concurrency: 5, nodes: 1, jobs: 1},
	{name: "batch100", desc: "as lowkiq, batch size 100", kind: "throughput", shards: 5, batch: 100, concurrency: 5, nodes: 1, jobs: 1},
	{name: "shards32", desc: "as lowkiq, 32 shards", kind: "throughput", shards: 32, batch: 1, concurrency: 5, nodes: 1, jobs: 1},
	{name: "payload1k", desc: "as lowkiq, 1 KiB payloads", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 1, payload: 1024, jobs: 1},
	{name: "merge", desc: "100 payloads per id (merged while waiting), batch 10", kind: "throughput", shards: 5, batch: 10, concurrency: 5, nodes: 1, perID: 100, jobs: 1},
	{name: "delayed", desc: "as batch10, perform_at spread over the next 2 s", kind: "throughput", shards: 5, batch: 10, concurrency: 5, nodes: 1, delay: 2 * time.Second, jobs: 1},
	{name: "webhook", desc: "as lowkiq, handled over HTTP: a webhook queue posting to a minimal Go receiver in the same process, one call per job", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 1, jobs: 1, webhook: true},
	{name: "webhook10", desc: "as webhook, batch size 10", kind: "throughput", shards: 5, batch: 10, concurrency: 5, nodes: 1, jobs: 1, webhook: true},
	{name: "pull", desc: "as lowkiq, handled by a Go pull worker over HTTP (5 loops, max_ids 1) in the same process, one lease per job; every call of a shard's window waits for a pull at once, as on a pull queue", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 1, jobs: 1, pull: true},
	{name: "pull-m5", desc: "as pull with one worker loop taking up to 5 ids per lease", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 1, jobs: 1, pull: true, pullMax: 5, pullLoops: 1},
	{name: "pull-m100", desc: "as pull with two worker loops taking up to 100 ids per lease", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 1, jobs: 1, pull: true, pullMax: 100, pullLoops: 2},
	{name: "pull10", desc: "as pull, batch size 10 (max_ids 10)", kind: "throughput", shards: 5, batch: 10, concurrency: 5, nodes: 1, jobs: 1, pull: true},
	{name: "nodes3", desc: "as lowkiq on 3 nodes in one process (a cluster)", kind: "throughput", shards: 5, batch: 1, concurrency: 5, nodes: 3, jobs: 1},
	{name: "latency", desc: "idle node: enqueue one job, wait for its handler; 500 times", kind: "latency", shards: 5, batch: 1, concurrency: 5, nodes: 1},
	{name: "idle", desc: "idle node serving 50 queues x 8 shards: Redis round trips and commands per minute, node and Redis CPU, while nothing is enqueued (Config.Idle, 60 s)", kind: "idle", queues: 50, shards: 8, batch: 1, concurrency: 5, nodes: 1},
	{name: "idle5", desc: "as idle with 1 queue x 5 shards: idle cost against the shard count", kind: "idle", queues: 1, shards: 5, batch: 1, concurrency: 5, nodes: 1},
	{name: "failover", desc: "3 node processes under load, SIGKILL one", kind: "failover", shards: 16, batch: 5, concurrency: 5, nodes: 3, jobs: 0.2},
	{name: "cluster1", desc: "3 nodes, 16 shards, batch 10 on a throwaway Redis Cluster of 1 master", kind: "throughput", shards: 16, batch: 10, concurrency: 5, nodes: 3, jobs: 1, topology: "cluster1"},
	{name: "cluster3", desc: "as cluster1 on a Redis Cluster of 3 masters", kind: "throughput", shards: 16, batch: 10, concurrency: 5, nodes: 3, jobs: 1, topology: "cluster3"},
	{name: "async", desc: "as cluster1 on a throwaway master with one replica, durability async", kind: "throughput", shards: 16, batch: 10, concurrency: 5, nodes: 3, jobs: 1, topology: "replica"},
	{name: "replicated", desc: "as async with durability replicated (WAIT 1 after every write)", kind: "throughput", shards: 16, batch: 10, concurrency: 5, nodes: 3, jobs: 1, topology: "replica", durability: "replicated"},
}

// Names returns the scenario names with their descriptions.
func Names() [][2]string {
	out := make([][2]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = [2]string{s.name, s.desc}
	}
	return out
}

// Run runs the scenarios and returns their results; it returns ErrAudit
// (with the results) when a run broke an invariant.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Jobs <= 0 {
		cfg.Jobs = DefaultJobs
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if len(cfg.Scenarios) == 0 {
		cfg.Scenarios = []string{"lowkiq"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var todo []scenario
	for _, name := range cfg.Scenarios {
		if name == "all" {
			todo = scenarios
			break
		}
		i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == name })
		if i < 0 {
			return nil, fmt.Errorf("bench: unknown scenario %q (one of %s, or all)", name, strings.Join(scenarioNames(), ", "))
		}
		todo = append(todo, scenarios[i])
	}
	url := cfg.Redis
	if url == "" {
		srv, err := redisserver.Start(redisserver.Options{})
		if err != nil {
			return nil, fmt.Errorf("bench: no --redis given and cannot start a redis-server: %w", err)
		}
		defer srv.Close()
		url = srv.URL()
	}
	u, err := redisurl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("bench: redis URL: %w", err)
	}
	if cfg.NodeBinary == "" {
		cfg.NodeBinary, _ = os.Executable()
	}
	r := &runner{cfg: cfg, redisURL: url, redis: u}
	var results []Result
	failed := false
	for _, sc := range todo {
		res, err := r.runOn(ctx, sc)
		if err != nil {
			return results, fmt.Errorf("bench: %s: %w", sc.name, err)
		}
		results = append(results, res)
		if !res.Audit.OK {
			failed = true
		}
	}
	if failed {
		return results, ErrAudit
	}
	return results, nil
}

func scenarioNames() []string {
	out := make([]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.name
	}
	return out
}
