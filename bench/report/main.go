// Command report measures, in one session on throwaway redis-servers, what
// the README's performance table shows: the previous release (storage layout
// 1) and this release side by side on Lowkiq's workload, asynq on the same
// workload, Redis memory per queued job of both layouts, webhook calls of
// both releases through their binaries, pull workers in Go, Python and
// TypeScript (each a process of its own), this release's binary with HTTP
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
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "receive" {
		if err := receive(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "receiver:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "pull-worker" {
		if err := pullWorker(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pull worker:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "pull-ceiling" {
		if err := pullCeiling(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pull ceiling:", err)
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
	flag.StringVar(&cfg.root, "root", ".", "the repository's `directory`, where the pull workers of Python and TypeScript and their SDKs are")
	flag.IntVar(&cfg.pullConcurrency, "pull-concurrency", 2, "leases each pull worker holds at once")
	flag.IntVar(&cfg.pullMaxIDs, "pull-max-ids", 100, "the most ids of a pull worker's lease")
	flag.IntVar(&cfg.pullBatch, "pull-batch", 1, "the pull queue's batch_size (the most ids of one shard a lease carries)")
	flag.StringVar(&cfg.pythonBefore, "pull-python-before", "", "an older sdk/python `directory`: adds a Python pull row with it, beside the current one")
	flag.StringVar(&cfg.pythonBeforeRev, "pull-python-before-rev", "", "the git `revision` that directory came from (printed only)")
	langs := flag.String("pull-langs", strings.Join(pullLangs, ","), "comma-separated pull workers to run: "+strings.Join(pullLangs, ", "))
	skip := flag.String("skip", "", "comma-separated parts to leave out: "+strings.Join(parts, ", "))
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
	for _, l := range strings.Split(*langs, ",") {
		if l = strings.TrimSpace(l); l != "" {
			if !slices.Contains(pullLangs, l) {
				fmt.Fprintf(os.Stderr, "report: unknown pull worker %q in --pull-langs (one of %s)\n", l, strings.Join(pullLangs, ", "))
				os.Exit(2)
			}
			cfg.pullLangs = append(cfg.pullLangs, l)
		}
	}
	if cfg.newBin == "" || cfg.jobs < 1000 || cfg.rounds < 1 || cfg.pullConcurrency < 1 || cfg.pullMaxIDs < 1 || cfg.pullBatch < 1 {
		fmt.Fprintln(os.Stderr, "report: --new is required, --jobs at least 1000, --rounds, --pull-concurrency, --pull-max-ids and --pull-batch at least 1")
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

var parts = []string{"lowkiq", "asynq", "memory", "features", "webhook", "pull", "http", "cluster"}

type config struct {
	newBin, oldBin, asynqBin, storeTest, oldRev string
	root                                        string // the repository, for the pull workers
	jobs, rounds, memJobs                       int
	pullConcurrency, pullMaxIDs, pullBatch      int
	pullLangs                                   []string // the pull workers to run, of pullLangs
	pythonBefore, pythonBeforeRev               string   // an older sdk/python for a "pull/python-before" row
	fsync                                       bool
	skip                                        map[string]bool
}

// sample is one run's figures, per job (per call for webhooks). NaN: not
// measured.
type sample struct {
	rate, enqRate                  float64
	endToEnd                       float64 // jobs/s from the first POST to an empty queue, enqueue and drain overlapping
	nodeCPU, redisCPU, receiverCPU float64 // µs per job; receiverCPU: the webhook receiver's or the pull worker's
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
	return sample{rate: n, enqRate: n, endToEnd: n, nodeCPU: n, redisCPU: n, receiverCPU: n, cmds: n, roundTrips: n, busiestMasterCPU: n, ok: true}
}

type report struct {
	cfg     config
	samples map[string][]sample // by row key
	memory  map[string]map[string]float64
	// features are the metrics of the lifecycle features' benchmarks, by
	// benchmark name.
	features map[string]map[string]float64
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

// run runs every round of the measurements not skipped, then the memory
// benchmark, and prints the table.
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
	for round := 1; round <= r.cfg.rounds; round++ {
		if err := r.round(ctx, round); err != nil {
			return err
		}
	}
	if r.runs("memory") {
		if err := r.memoryBench(ctx); err != nil {
			return err
		}
	}
	if r.runs("features") {
		if err := r.featuresBench(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("== done in %s, load average %s at the start, %s at the end\n\n", time.Since(start).Round(time.Second), startLoad, loadAvg())
	r.table()
	return nil
}

// roundPart is a part of the report that runs in each round.
type roundPart struct {
	name string
	// fsync: with --fsync, the part runs a second time in the round, with
	// appendfsync always.
	fsync bool
	// run measures the part once; order is the round's order of the
	// releases.
	run func(ctx context.Context, round int, order []string, fsync bool) error
}

// roundParts are the parts of a round, in the order they run.
func (r *report) roundParts() []roundPart {
	return []roundPart{
		{name: "lowkiq", fsync: true, run: func(ctx context.Context, round int, order []string, fsync bool) error {
			for _, rel := range order {
				if err := r.lowkiq(ctx, round, rel, fsync); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "asynq", fsync: true, run: func(ctx context.Context, round int, _ []string, fsync bool) error {
			return r.asynq(ctx, round, fsync)
		}},
		{name: "webhook", run: func(ctx context.Context, round int, order []string, _ bool) error {
			for _, rel := range order {
				if err := r.webhook(ctx, round, rel); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "pull", run: func(ctx context.Context, round int, _ []string, _ bool) error {
			return r.pull(ctx, round)
		}},
		{name: "http", fsync: true, run: func(ctx context.Context, round int, _ []string, fsync bool) error {
			return r.httpNoop(ctx, round, fsync)
		}},
		{name: "cluster", run: func(ctx context.Context, round int, _ []string, _ bool) error {
			return r.cluster(ctx, round)
		}},
	}
}

// round runs one round: each part not skipped, the previous release first
// in odd rounds and last in even ones; then, with --fsync, the parts that
// measure fsync again with appendfsync always.
func (r *report) round(ctx context.Context, round int) error {
	order := []string{"old", "new"}
	if r.cfg.oldBin == "" {
		order = []string{"new"}
	}
	if round%2 == 0 {
		slices.Reverse(order)
	}
	fmt.Printf("== round %d (%s first), load average %s\n", round, order[0], loadAvg())
	for _, fsync := range []bool{false, true} {
		if fsync && !r.cfg.fsync {
			break
		}
		for _, p := range r.roundParts() {
			if (fsync && !p.fsync) || !r.runs(p.name) {
				continue
			}
			if err := p.run(ctx, round, order, fsync); err != nil {
				return err
			}
		}
	}
	return nil
}

// runs reports whether the report measures a part: it is not skipped, and
// the binary it needs was given (asynq, memory).
func (r *report) runs(part string) bool {
	switch {
	case r.cfg.skip[part]:
		return false
	case part == "asynq":
		return r.cfg.asynqBin != ""
	case part == "memory", part == "features":
		return r.cfg.storeTest != ""
	}
	return true
}

func (r *report) bin(rel string) string {
	if rel == "old" {
		return r.cfg.oldBin
	}
	return r.cfg.newBin
}

func (r *report) add(key string, s sample) { r.samples[key] = append(r.samples[key], s) }
