// Command report measures, in one session on throwaway redis-servers, what
// the README's performance table shows: the previous release (storage layout
// 1) and this release side by side on Lowkiq's workload, asynq on the same
// workload, Redis memory per queued job of both layouts, webhook calls of
// both releases through their binaries, this release's binary with HTTP
// enqueue, and a Redis Cluster of 1 and of 3 masters. Each measurement runs
// ROUNDS times, the order of the releases alternating, and the command
// prints one raw line per run and then one markdown table.
//
// run.sh builds the binaries and runs it (make bench-report); it is a main
// package, so nothing can import it.
//
//	go run ./bench/report --new bin/orderly --old /tmp/orderly-1e73f1f \
//	    --asynq /tmp/asynq-bench --storetest /tmp/redisstore.test
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/internal/redisserver"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "receive" {
		if err := receive(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "receiver:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	flag.StringVar(&cfg.newBin, "new", "", "this release's orderly `binary`")
	flag.StringVar(&cfg.oldBin, "old", "", "the previous release's orderly `binary` (layout 1)")
	flag.StringVar(&cfg.asynqBin, "asynq", "", "the asynq benchmark `binary` (bench/asynq)")
	flag.StringVar(&cfg.storeTest, "storetest", "", "the test `binary` of persistence/redisstore (go test -c), for the memory benchmark")
	flag.StringVar(&cfg.oldRev, "old-rev", "1e73f1f", "git `revision` the previous release's binary was built from (printed only)")
	flag.IntVar(&cfg.jobs, "jobs", 100_000, "jobs per throughput run")
	flag.IntVar(&cfg.rounds, "rounds", 2, "runs of each measurement, the order of the releases alternating")
	flag.IntVar(&cfg.memJobs, "memjobs", 1_000_000, "queued jobs the memory benchmark fills each layout with")
	flag.BoolVar(&cfg.fsync, "fsync", false, "also run Lowkiq's workload, asynq and HTTP enqueue with appendfsync always")
	skip := flag.String("skip", "", "comma-separated parts to leave out: lowkiq, asynq, memory, webhook, http, cluster")
	flag.Parse()
	cfg.skip = map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !slices.Contains(parts, s) {
				fmt.Fprintf(os.Stderr, "report: unknown part %q in --skip (one of %s)\n", s, strings.Join(parts, ", "))
				os.Exit(2)
			}
			cfg.skip[s] = true
		}
	}
	if cfg.newBin == "" || cfg.jobs < 1000 || cfg.rounds < 1 {
		fmt.Fprintln(os.Stderr, "report: --new is required, --jobs at least 1000, --rounds at least 1")
		os.Exit(2)
	}
	r := &report{cfg: cfg, samples: map[string][]sample{}}
	if err := r.run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// asynqFsyncJobs caps asynq's run with appendfsync always, which takes
// minutes at 100k jobs.
const asynqFsyncJobs = 20_000

var parts = []string{"lowkiq", "asynq", "memory", "webhook", "http", "cluster"}

type config struct {
	newBin, oldBin, asynqBin, storeTest, oldRev string
	jobs, rounds, memJobs                       int
	fsync                                       bool
	skip                                        map[string]bool
}

// sample is one run's figures, per job (per call for webhooks). NaN: not
// measured.
type sample struct {
	rate, enqRate                  float64
	nodeCPU, redisCPU, receiverCPU float64 // µs per job
	cmds, roundTrips               float64
	busiestMasterCPU               float64 // µs per job, Redis Cluster only
	ok                             bool    // the run's audit, where there is one
}

func (s sample) cpu() float64 {
	t := s.nodeCPU + s.redisCPU
	if !math.IsNaN(s.receiverCPU) {
		t += s.receiverCPU
	}
	return t
}

func blank() sample {
	n := math.NaN()
	return sample{rate: n, enqRate: n, nodeCPU: n, redisCPU: n, receiverCPU: n, cmds: n, roundTrips: n, busiestMasterCPU: n, ok: true}
}

type report struct {
	cfg     config
	samples map[string][]sample // by row key
	memory  map[string]map[string]float64
}

func (r *report) raw(round int, key, line string) {
	fmt.Printf("raw round=%d %s: %s\n", round, key, strings.TrimSpace(line))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (r *report) run(ctx context.Context) error {
	start := time.Now()
	startLoad := loadAvg()
	prev := "previous release " + r.cfg.oldRev
	if r.cfg.oldBin == "" {
		prev = "previous release not run"
	}
	skipped := "none"
	if len(r.cfg.skip) > 0 {
		skipped = strings.Join(slices.Sorted(maps.Keys(r.cfg.skip)), ",")
	}
	fmt.Printf("bench-report: %d jobs, %d rounds, memory over %d jobs, fsync=%v, skip %s; %s; load average %s\n",
		r.cfg.jobs, r.cfg.rounds, r.cfg.memJobs, r.cfg.fsync, skipped, prev, startLoad)
	releases := []string{"old", "new"}
	if r.cfg.oldBin == "" {
		releases = []string{"new"}
	}
	for round := 1; round <= r.cfg.rounds; round++ {
		order := slices.Clone(releases)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		fmt.Printf("== round %d (%s first), load average %s\n", round, order[0], loadAvg())
		if !r.cfg.skip["lowkiq"] {
			for _, rel := range order {
				if err := r.lowkiq(ctx, round, rel, false); err != nil {
					return err
				}
			}
		}
		if !r.cfg.skip["asynq"] && r.cfg.asynqBin != "" {
			if err := r.asynq(ctx, round, false); err != nil {
				return err
			}
		}
		if !r.cfg.skip["webhook"] {
			for _, rel := range order {
				if err := r.webhook(ctx, round, rel); err != nil {
					return err
				}
			}
		}
		if !r.cfg.skip["http"] {
			if err := r.httpNoop(ctx, round, false); err != nil {
				return err
			}
		}
		if !r.cfg.skip["cluster"] {
			if err := r.cluster(ctx, round); err != nil {
				return err
			}
		}
		if r.cfg.fsync {
			if !r.cfg.skip["lowkiq"] {
				for _, rel := range order {
					if err := r.lowkiq(ctx, round, rel, true); err != nil {
						return err
					}
				}
			}
			if !r.cfg.skip["asynq"] && r.cfg.asynqBin != "" {
				if err := r.asynq(ctx, round, true); err != nil {
					return err
				}
			}
			if !r.cfg.skip["http"] {
				if err := r.httpNoop(ctx, round, true); err != nil {
					return err
				}
			}
		}
	}
	if !r.cfg.skip["memory"] && r.cfg.storeTest != "" {
		if err := r.memoryBench(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("== done in %s, load average %s at the start, %s at the end\n\n", time.Since(start).Round(time.Second), startLoad, loadAvg())
	r.table()
	return nil
}

func (r *report) bin(rel string) string {
	if rel == "old" {
		return r.cfg.oldBin
	}
	return r.cfg.newBin
}

func (r *report) add(key string, s sample) { r.samples[key] = append(r.samples[key], s) }

// benchResult is the part of `orderly bench --json` the report reads; both
// releases print these fields.
type benchResult struct {
	Scenario         string             `json:"scenario"`
	Jobs             int                `json:"jobs"`
	EnqueuePerSec    float64            `json:"enqueue_jobs_per_sec"`
	ProcessPerSec    float64            `json:"process_jobs_per_sec"`
	RoundTripsPerJob *float64           `json:"round_trips_per_job"` // nil: not counted
	RedisCmdsPerJob  float64            `json:"redis_commands_per_job"`
	CPUSec           float64            `json:"cpu_seconds"`
	RedisCPUSec      float64            `json:"redis_cpu_seconds"`
	RedisCPUByMaster map[string]float64 `json:"redis_cpu_seconds_by_master"`
	Audit            struct {
		OK bool `json:"ok"`
	} `json:"audit"`
}

func (b benchResult) sample() sample {
	s := blank()
	n := float64(b.Jobs)
	s.rate, s.enqRate = b.ProcessPerSec, b.EnqueuePerSec
	s.nodeCPU, s.redisCPU = b.CPUSec/n*1e6, b.RedisCPUSec/n*1e6
	s.cmds = b.RedisCmdsPerJob
	if b.RoundTripsPerJob != nil {
		s.roundTrips = *b.RoundTripsPerJob
	}
	s.ok = b.Audit.OK
	if len(b.RedisCPUByMaster) > 0 {
		s.busiestMasterCPU = 0
		for _, v := range b.RedisCPUByMaster {
			s.busiestMasterCPU = max(s.busiestMasterCPU, v/n*1e6)
		}
	}
	return s
}

// orderlyBench runs `bin bench --json` and returns its results.
func orderlyBench(ctx context.Context, bin string, args ...string) ([]benchResult, string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"bench", "--json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s bench %s: %w\n%s%s", bin, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	var res []benchResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, "", fmt.Errorf("%s bench: decode its JSON: %w", bin, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return nil, "", err
	}
	return res, compact.String(), nil
}

func fsyncKey(fsync bool) string {
	if fsync {
		return "/fsync"
	}
	return ""
}

// lowkiq runs `bench --scenario lowkiq` of one release on a fresh server.
func (r *report) lowkiq(ctx context.Context, round int, rel string, fsync bool) error {
	srv, err := redisserver.Start(redisserver.Options{AOF: fsync})
	if err != nil {
		return err
	}
	defer srv.Close()
	res, line, err := orderlyBench(ctx, r.bin(rel), "--redis", srv.URL(), "--scenario", "lowkiq", "--jobs", strconv.Itoa(r.cfg.jobs))
	if err != nil {
		return err
	}
	key := "lowkiq/" + rel + fsyncKey(fsync)
	r.raw(round, key, line)
	r.add(key, res[0].sample())
	return nil
}

// asynqResult is bench/asynq's line.
type asynqResult struct {
	Jobs            int     `json:"jobs"`
	EnqueuePerSec   float64 `json:"enqueue_jobs_per_sec"`
	ProcessPerSec   float64 `json:"process_jobs_per_sec"`
	CPUSec          float64 `json:"cpu_seconds"`
	RedisCPUSec     float64 `json:"redis_cpu_seconds"`
	RedisCmdsPerJob float64 `json:"redis_commands_per_job"`
}

func (r *report) asynq(ctx context.Context, round int, fsync bool) error {
	srv, err := redisserver.Start(redisserver.Options{AOF: fsync})
	if err != nil {
		return err
	}
	defer srv.Close()
	jobs := r.cfg.jobs
	if fsync {
		jobs = min(jobs, asynqFsyncJobs) // asynq writes 14 commands a job, each fsynced
	}
	out, err := exec.CommandContext(ctx, r.cfg.asynqBin, "--redis", srv.Addr(), "--jobs", strconv.Itoa(jobs)).Output()
	if err != nil {
		return fmt.Errorf("asynq bench: %w", err)
	}
	var a asynqResult
	if err := json.Unmarshal(out, &a); err != nil {
		return fmt.Errorf("asynq bench: decode: %w", err)
	}
	key := "asynq" + fsyncKey(fsync)
	r.raw(round, key, string(out))
	s := blank()
	n := float64(a.Jobs)
	s.rate, s.enqRate = a.ProcessPerSec, a.EnqueuePerSec
	s.nodeCPU, s.redisCPU, s.cmds = a.CPUSec/n*1e6, a.RedisCPUSec/n*1e6, a.RedisCmdsPerJob
	r.add(key, s)
	return nil
}

// cluster runs cluster1 and cluster3 of this release (each starts its own
// Redis Cluster).
func (r *report) cluster(ctx context.Context, round int) error {
	res, line, err := orderlyBench(ctx, r.cfg.newBin, "--scenario", "cluster1,cluster3", "--jobs", strconv.Itoa(r.cfg.jobs))
	if err != nil {
		return err
	}
	r.raw(round, "cluster", line)
	for _, b := range res {
		r.add(b.Scenario, b.sample())
	}
	return nil
}

var memLine = regexp.MustCompile(`^BenchmarkMemory/layout=(\d)\S*\s+\d+\s+(.*)$`)

// memoryBench runs BenchmarkMemory of persistence/redisstore: layout 1
// (the previous release's scripts) and layout 2, each on a server of its
// own.
func (r *report) memoryBench(ctx context.Context) error {
	fmt.Printf("== memory: BenchmarkMemory over %d queued jobs per layout\n", r.cfg.memJobs)
	cmd := exec.CommandContext(ctx, r.cfg.storeTest, "-test.run", "^$", "-test.bench", "^BenchmarkMemory$", "-test.benchtime", "1x",
		"-memjobs", strconv.Itoa(r.cfg.memJobs))
	cmd.Dir = filepath.Dir(r.cfg.storeTest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("memory benchmark: %w\n%s", err, out)
	}
	r.memory = map[string]map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		m := memLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		r.raw(1, "memory/layout"+m[1], line)
		f := strings.Fields(m[2])
		vals := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				vals[f[i+1]] = v
			}
		}
		r.memory[m[1]] = vals
	}
	if len(r.memory) == 0 {
		return fmt.Errorf("memory benchmark: no result lines in\n%s", out)
	}
	return nil
}

// procCPU returns a process's CPU seconds: the sum over its threads of
// /proc/PID/task/TID/schedstat (nanoseconds on a CPU), or, where that is
// missing, user and system time from /proc/PID/stat (clock ticks).
func procCPU(pid int) (float64, error) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var ns int64
	read := 0
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		ns += v
		read++
	}
	if read > 0 {
		return float64(ns) / 1e9, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// node is an orderly node process serving one queue, "bench".
type node struct {
	cmd  *exec.Cmd
	api  string
	http *http.Client
	log  string
	done chan error
}

func startNode(ctx context.Context, bin, redisURL, handler string) (*node, error) {
	dir, err := os.MkdirTemp("", "orderly-report-")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "orderly.yaml")
	yaml := "queues:\n  - name: bench\n    shards: 5\n    batch_size: 1\n    handler: " + handler + "\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	port, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	gossip, err := redisserver.FreePort() // not the default 7946, which another node may hold
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", conf, "--redis", redisURL, "--http", addr, "--bind", "127.0.0.1:"+strconv.Itoa(gossip),
		"--concurrency", "5", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// One keep-alive connection, as a client library would use.
	n := &node{cmd: cmd, api: "http://" + addr, log: logf.Name(), done: make(chan error, 1),
		http: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}, Timeout: time.Minute}}
	go func() { n.done <- cmd.Wait(); logf.Close() }() // ends with the process, stopped by stop
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := n.http.Get(n.api + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n, nil
			}
		}
		select {
		case err := <-n.done:
			b, _ := os.ReadFile(n.log)
			return nil, fmt.Errorf("node exited before ready: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			n.stop()
			return nil, errors.New("node not ready after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *node) stop() {
	n.cmd.Process.Signal(os.Interrupt)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
	os.RemoveAll(filepath.Dir(n.log))
}

func (n *node) post(path string, body []byte) error {
	resp, err := n.http.Post(n.api+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s %s", path, resp.Status, b)
	}
	return nil
}

// enqueue POSTs jobs job-0 .. job-(n-1) in bodies of 1000 on the node's one
// connection and returns the rate.
func (n *node) enqueue(count int) (float64, error) {
	var bodies [][]byte
	for start := 0; start < count; start += 1000 {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := start; i < min(start+1000, count); i++ {
			if i > start {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"job-%d"}`, i)
		}
		b.WriteByte(']')
		bodies = append(bodies, b.Bytes())
	}
	t0 := time.Now()
	for _, b := range bodies {
		if err := n.post("/api/v1/queues/bench/jobs", b); err != nil {
			return 0, err
		}
	}
	return float64(count) / time.Since(t0).Seconds(), nil
}

// waitEmpty polls the queue every 10 ms on the node's one connection until
// nothing is queued or in flight, and returns the polls it made.
func (n *node) waitEmpty(limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	polls := 0
	for {
		polls++
		resp, err := n.http.Get(n.api + "/api/v1/queues/bench")
		if err != nil {
			return polls, err
		}
		var q struct {
			Length int64 `json:"length"`
			Busy   int64 `json:"busy"`
		}
		err = json.NewDecoder(resp.Body).Decode(&q)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return polls, fmt.Errorf("queue stats: %w", err)
		}
		if q.Length == 0 && q.Busy == 0 {
			return polls, nil
		}
		if time.Now().After(deadline) {
			return polls, fmt.Errorf("queue not empty after %s: %d queued, %d in flight", limit, q.Length, q.Busy)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// meter reads the CPU of the node, Redis and, when there is one, the
// receiver, and Redis's commands.
type meter struct {
	node, receiver int // pids; 0: none
	rdb            *redis.Client
}

type reading struct {
	at             time.Time
	node, receiver float64
	redis          redisserver.Usage
}

func (m meter) read(ctx context.Context) (reading, error) {
	var rd reading
	var err error
	if rd.redis, err = redisserver.ReadUsage(ctx, m.rdb); err != nil {
		return rd, err
	}
	if rd.node, err = procCPU(m.node); err != nil {
		return rd, err
	}
	if m.receiver != 0 {
		if rd.receiver, err = procCPU(m.receiver); err != nil {
			return rd, err
		}
	}
	rd.at = time.Now()
	return rd, nil
}

func (m meter) sample(a, b reading, jobs int) sample {
	s := blank()
	n := float64(jobs)
	u := b.redis.Sub(a.redis)
	s.rate = n / b.at.Sub(a.at).Seconds()
	s.nodeCPU = (b.node - a.node) / n * 1e6
	s.redisCPU = u.CPUSeconds / n * 1e6
	s.cmds = float64(u.Commands) / n
	if m.receiver != 0 {
		s.receiverCPU = (b.receiver - a.receiver) / n * 1e6
	}
	return s
}

// httpNoop runs Lowkiq's workload through this release's binary: the queue
// paused, the jobs POSTed, then resumed and the drain timed.
func (r *report) httpNoop(ctx context.Context, round int, fsync bool) error {
	srv, err := redisserver.Start(redisserver.Options{AOF: fsync})
	if err != nil {
		return err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	n, err := startNode(ctx, r.cfg.newBin, srv.URL(), "{type: noop}")
	if err != nil {
		return err
	}
	defer n.stop()
	if err := n.post("/api/v1/queues/bench/pause", nil); err != nil {
		return err
	}
	enq, err := n.enqueue(r.cfg.jobs)
	if err != nil {
		return err
	}
	m := meter{node: n.cmd.Process.Pid, rdb: rdb}
	a, err := m.read(ctx)
	if err != nil {
		return err
	}
	if err := n.post("/api/v1/queues/bench/resume", nil); err != nil {
		return err
	}
	polls, err := n.waitEmpty(10 * time.Minute)
	if err != nil {
		return err
	}
	b, err := m.read(ctx)
	if err != nil {
		return err
	}
	s := m.sample(a, b, r.cfg.jobs)
	s.enqRate = enq
	key := "http/new" + fsyncKey(fsync)
	r.raw(round, key, fmt.Sprintf("enqueue %.0f jobs/s, process %.0f jobs/s, node %.2f µs/job, Redis %.2f µs/job, Redis commands %.3f/job, %d polls of 10 ms",
		s.enqRate, s.rate, s.nodeCPU, s.redisCPU, s.cmds, polls))
	r.add(key, s)
	return nil
}

// webhook runs a release's node with a webhook queue posting to the
// receiver (this command, `receive`, in a process of its own). The receiver
// holds its first calls while the jobs are POSTed; releasing them starts
// the clock, which stops when the receiver has every job and the queue is
// empty.
func (r *report) webhook(ctx context.Context, round int, rel string) error {
	srv, err := redisserver.Start(redisserver.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	port, err := redisserver.FreePort()
	if err != nil {
		return err
	}
	raddr := "127.0.0.1:" + strconv.Itoa(port)
	rcv := exec.Command(self, "receive", "--addr", raddr, "--expect", strconv.Itoa(r.cfg.jobs))
	rcv.Stderr = os.Stderr
	gate, err := rcv.StdinPipe()
	if err != nil {
		return err
	}
	out, err := rcv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := rcv.Start(); err != nil {
		return err
	}
	defer func() { rcv.Process.Kill(); rcv.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		return fmt.Errorf("receiver did not start: %q", lines.Text())
	}
	n, err := startNode(ctx, r.bin(rel), srv.URL(), "{type: http, url: http://"+raddr+"/perform, timeout: 5m}")
	if err != nil {
		return err
	}
	defer n.stop()
	if _, err := n.enqueue(r.cfg.jobs); err != nil {
		return err
	}
	m := meter{node: n.cmd.Process.Pid, receiver: rcv.Process.Pid, rdb: rdb}
	a, err := m.read(ctx)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(gate, "go\n"); err != nil {
		return err
	}
	if !lines.Scan() {
		return fmt.Errorf("receiver ended early: %v", lines.Err())
	}
	done := lines.Text()
	if _, err := n.waitEmpty(time.Minute); err != nil {
		return err
	}
	b, err := m.read(ctx)
	if err != nil {
		return err
	}
	s := m.sample(a, b, r.cfg.jobs)
	key := "webhook/" + rel
	r.raw(round, key, fmt.Sprintf("%.0f calls/s, node %.2f + Redis %.2f + receiver %.2f = %.1f µs/call, Redis commands %.3f/call, receiver: %s",
		s.rate, s.nodeCPU, s.redisCPU, s.receiverCPU, s.cpu(), s.cmds, done))
	r.add(key, s)
	return nil
}
