package main

// The parts of the report: each runs a benchmark and records its samples.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/internal/redisserver"
)

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

// httpNoop runs Lowkiq's workload through this release's binary: the queue
// paused, the jobs POSTed, then resumed and the drain timed. Then, on the
// same node, the end-to-end rate: the same number of jobs POSTed into the
// running queue, timed from the first POST until the queue is empty, so
// enqueue and drain share the cores as they do in production.
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
	t0 := time.Now()
	if _, err := n.enqueue(r.cfg.jobs); err != nil {
		return err
	}
	if _, err := n.waitEmpty(10 * time.Minute); err != nil {
		return err
	}
	s.endToEnd = float64(r.cfg.jobs) / time.Since(t0).Seconds()
	key := "http/new" + fsyncKey(fsync)
	r.raw(round, key, fmt.Sprintf("enqueue %.0f jobs/s, process %.0f jobs/s, node %.2f µs/job, Redis %.2f µs/job, Redis commands %.3f/job, %d polls of 10 ms; end to end %.0f jobs/s",
		s.enqRate, s.rate, s.nodeCPU, s.redisCPU, s.cmds, polls, s.endToEnd))
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
