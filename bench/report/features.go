package main

// The features part: what the lifecycle features cost per job in the
// store, next to the same workload without them (docs/contract.md §3.12,
// §3.14), from the benchmarks of persistence/redisstore.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// featureLine matches a result line of the features' benchmarks: its name
// (without the GOMAXPROCS suffix) and its metrics.
var featureLine = regexp.MustCompile(`^(Benchmark(?:Process|ProcessRetained|EnqueueDedup)/\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// featureRows are the table's rows: a benchmark and what it measures.
var featureRows = []struct{ bench, label string }{
	{"BenchmarkProcess/layout=2/batch=1", "settle and fetch, batch 1, no retention"},
	{"BenchmarkProcessRetained/layout=2/batch=1", "the same, `retain_finished` on"},
	{"BenchmarkProcess/layout=2/batch=100", "settle and fetch, batch 100, no retention"},
	{"BenchmarkProcessRetained/layout=2/batch=100", "the same, `retain_finished` on"},
	{"BenchmarkEnqueueDedup/call=1/plain", "enqueue, 1 job per call, no `dedup_key`"},
	{"BenchmarkEnqueueDedup/call=1/key-window-off", "the same with a key, queue without `dedup_window`"},
	{"BenchmarkEnqueueDedup/call=1/key", "the same with a key, `dedup_window` on"},
	{"BenchmarkEnqueueDedup/call=1/key-dup", "the same, every job a duplicate"},
	{"BenchmarkEnqueueDedup/call=100/plain", "enqueue, 100 jobs per call, no `dedup_key`"},
	{"BenchmarkEnqueueDedup/call=100/key", "the same with keys, `dedup_window` on"},
}

// featuresBench runs the benchmarks of the lifecycle features once and
// keeps their metrics by benchmark name.
func (r *report) featuresBench(ctx context.Context) error {
	fmt.Println("== features: BenchmarkProcess, BenchmarkProcessRetained and BenchmarkEnqueueDedup")
	cmd := exec.CommandContext(ctx, r.cfg.storeTest, "-test.run", "^$",
		"-test.bench", "^(BenchmarkProcess|BenchmarkProcessRetained|BenchmarkEnqueueDedup)$", "-test.benchtime", "20000x")
	cmd.Dir = filepath.Dir(r.cfg.storeTest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("features benchmark: %w\n%s", err, out)
	}
	r.features = parseFeatures(string(out))
	for _, line := range strings.Split(string(out), "\n") {
		if m := featureLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			r.raw(1, "features/"+m[1], line)
		}
	}
	if len(r.features) == 0 {
		return fmt.Errorf("features benchmark: no result lines in\n%s", out)
	}
	return nil
}

// parseFeatures reads benchmark output into metrics by benchmark name.
func parseFeatures(out string) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		m := featureLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		vals := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				vals[f[i+1]] = v
			}
		}
		res[m[1]] = vals
	}
	return res
}

// featuresTable prints what each feature costs per job in the store.
func (r *report) featuresTable() {
	if len(r.features) == 0 {
		return
	}
	fmt.Print("\n| Per job in the store (one run, layout 2) | Redis commands | Lua µs | jobs/s |\n| --- | --- | --- | --- |\n")
	cell := func(v map[string]float64, unit, format string) string {
		x, ok := v[unit]
		if !ok {
			return "-"
		}
		return fmt.Sprintf(format, x)
	}
	for _, row := range featureRows {
		v, ok := r.features[row.bench]
		if !ok {
			continue
		}
		fmt.Printf("| %s | %s | %s | %s |\n", row.label, cell(v, "rediscmds/job", "%.2f"), cell(v, "lua-us/job", "%.1f"), cell(v, "jobs/s", "%.0f"))
	}
}
