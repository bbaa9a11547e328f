package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orderlyhq/orderly/cmd/internal/bench"
)

var benchHelp = help{
	Usage: []string{"orderly bench [--redis URL] [--scenario NAME,...|all] [--jobs N] [flags]"},
	Text: `Measures Orderly on this machine and audits what it did. The default
scenario is Lowkiq's benchmark: enqueue N blank jobs, then process them with
concurrency 5 on 5 shards at batch size 1. Without --redis a throwaway
redis-server is started (it must be installed). Nodes run in this process,
except in the failover scenario, which starts node processes of this binary.

Reports enqueue and processing jobs/s, the time to empty the queue,
enqueue-to-handler latency, Redis round trips and Redis-side commands per
job (INFO commandstats, commands inside scripts included), CPU seconds of
the nodes and of Redis, and peak memory. Every run records what the handlers
got and checks, per id, that no two calls overlapped, that payloads came in
score order and that nothing was lost; the command exits 1 when an
invariant broke. The idle scenarios report instead what a node that has
nothing to do costs per minute (--idle sets how long they measure). --list
shows the scenarios. --cpuprofile and --memprofile
write pprof profiles of the whole run (the harness and its audit included).`,
	Examples: []string{
		"orderly bench",
		"orderly bench --scenario all --json > bench.json",
		"orderly bench --redis redis://127.0.0.1:6379/15 --scenario lowkiq,batch10 --jobs 1000000",
		"orderly bench --scenario idle5,idle --idle 30s",
	},
}

// benchCmd runs the benchmark.
func benchCmd(e *env, args []string) int {
	fs := e.newFlags("bench", benchHelp)
	redisURL := fs.String("redis", e.getenv("ORDERLY_BENCH_REDIS"), "Redis `URL`; empty starts a throwaway redis-server")
	fs.env["redis"] = "ORDERLY_BENCH_REDIS"
	jobs := fs.Int("jobs", bench.DefaultJobs, "jobs per throughput scenario")
	idle := fs.Duration("idle", bench.DefaultIdle, "how long the idle scenarios measure")
	scenarios := fs.String("scenario", "lowkiq", "comma-separated scenarios, or all (see --list)")
	list := fs.Bool("list", false, "list the scenarios and exit")
	asJSON := fs.Bool("json", false, "print JSON instead of a table (errors too, on stderr)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this `file`")
	memprofile := fs.String("memprofile", "", "write an allocation profile of the run to this `file` (go tool pprof -sample_index=alloc_space)")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	if *list {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, s := range bench.Names() {
			fmt.Fprintf(tw, "%s\t%s\n", s[0], s[1])
		}
		tw.Flush()
		return ExitOK
	}
	if *jobs < 1 {
		return e.usage(fs, "--jobs must be at least 1")
	}
	if *idle < time.Second {
		return e.usage(fs, "--idle must be at least 1s, got %s", *idle)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return e.fail("bench", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return e.fail("bench", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		f, err := os.Create(*memprofile)
		if err != nil {
			return e.fail("bench", err)
		}
		defer func() {
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				e.fail("bench", fmt.Errorf("write the allocation profile: %w", err))
			}
			f.Close()
		}()
	}
	cfg := bench.Config{Redis: *redisURL, Jobs: *jobs, Idle: *idle, Scenarios: strings.Split(*scenarios, ",")}
	if e.stderrTTY {
		cfg.Progress = e.stderr
	}
	results, err := bench.Run(e.ctx, cfg)
	if cfg.Progress != nil {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil && !errors.Is(err, bench.ErrAudit) {
		if strings.Contains(err.Error(), "unknown scenario") {
			return e.usage(fs, "%v", err)
		}
		return e.fail("bench", err)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(results)
	} else {
		printBench(e, results)
	}
	if err != nil {
		return e.fail("bench", errors.New("an invariant broke; see the audit column"))
	}
	return ExitOK
}

// printBench prints the results as tables: one for the scenarios that
// process jobs, one for the idle scenarios (their costs per minute).
func printBench(e *env, results []bench.Result) {
	var busy, idle []bench.Result
	for _, r := range results {
		if r.IdleSec > 0 {
			idle = append(idle, r)
		} else {
			busy = append(busy, r)
		}
	}
	if len(busy) > 0 {
		printBusy(e, busy)
	}
	if len(idle) > 0 {
		if len(busy) > 0 {
			fmt.Fprintln(e.stdout)
		}
		printIdle(e, idle)
	}
}

// printIdle prints what the idle scenarios cost per minute of an idle node.
func printIdle(e *env, results []bench.Result) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tQUEUES\tSHARDS\tMEASURED\tRT/MIN\tNODE CMDS/MIN\tREDIS CMDS/MIN\tNODE CPU\tREDIS CPU\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0fs\t%.0f\t%.0f\t%.0f\t%.2f%%\t%.2f%%\t\n", r.Scenario, r.Queues, r.Queues*r.Shards,
			r.IdleSec, r.RoundTripsPerMin, r.NodeCmdsPerMin, r.RedisCmdsPerMin, r.CPUPercent, r.RedisCPUPercent)
	}
	tw.Flush()
}

// printBusy prints the scenarios that process jobs.
func printBusy(e *env, results []bench.Result) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tJOBS\tENQUEUE/S\tPROCESS/S\tWALL\tP50\tP99\tCALLS\tRT/JOB\tCMDS/JOB\tCPU\tREDIS CPU\tCPU/JOB\tPEAK MB\tFAILOVER\tAUDIT\t")
	num := func(v float64, format string) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	for _, r := range results {
		audit := "ok"
		if !r.Audit.OK {
			audit = fmt.Sprintf("BROKEN (%d overlaps, %d order, %d lost)", r.Audit.Overlaps, r.Audit.OrderViolations, r.Audit.Lost)
		} else if r.Audit.Duplicates > 0 {
			audit = fmt.Sprintf("ok (%d redelivered)", r.Audit.Duplicates)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, r.Jobs,
			num(r.EnqueuePerSec, "%.0f"), num(r.ProcessPerSec, "%.0f"), num(r.WallSec, "%.2fs"),
			num(r.LatencyP50Ms, "%.2fms"), num(r.LatencyP99Ms, "%.2fms"), num(float64(r.Calls), "%.0f"),
			num(r.RoundTripsPerJob, "%.3f"), num(r.RedisCmdsPerJob, "%.2f"),
			num(r.CPUSec, "%.2fs"), num(r.RedisCPUSec, "%.2fs"), num(r.CPUPerJobMicros, "%.1fµs"), num(r.PeakRSSMB, "%.0f"),
			num(r.FailoverSec, "%.2fs"), audit)
	}
	tw.Flush()
}
