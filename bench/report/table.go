package main

import (
	"fmt"
	"math"
	"strings"
)

// row is one line of the table: a key of report.samples and its label.
type row struct {
	key, label string
	// webhook rows show the receiver's CPU, pull rows the worker's.
	thirdCPU bool
}

func (r *report) rows() []row {
	jobs := fmt.Sprintf("%dk", r.cfg.jobs/1000)
	return []row{
		{key: "lowkiq/old", label: "`lowkiq`, previous release (layout 1)"},
		{key: "lowkiq/new", label: "`lowkiq`, this release (layout 2)"},
		{key: "asynq", label: "asynq, same workload (no ordering)"},
		{key: "lowkiq/old/fsync", label: "`lowkiq`, previous release, `appendfsync always`"},
		{key: "lowkiq/new/fsync", label: "`lowkiq`, this release, `appendfsync always`"},
		{key: "asynq/fsync", label: fmt.Sprintf("asynq, `appendfsync always` (%dk jobs)", min(r.cfg.jobs, asynqFsyncJobs)/1000)},
		{key: "http/new", label: "this release's binary, HTTP enqueue (" + jobs + " jobs in POSTs of 1000 on one connection), noop handler"},
		{key: "http/new/fsync", label: "the same, `appendfsync always`"},
		{key: "webhook/old", label: "webhook at batch 1 to a Go receiver (a process of its own), previous release: calls/s", thirdCPU: true},
		{key: "webhook/new", label: "webhook at batch 1, this release: calls/s", thirdCPU: true},
		{key: "pull/go", label: fmt.Sprintf("pull queue at batch %d, a Go pull worker (`client.PullWorker`, a process of its own, concurrency %d, max_ids %d)", r.cfg.pullBatch, r.cfg.pullConcurrency, r.cfg.pullMaxIDs), thirdCPU: true},
		{key: "pull/python-before", label: "the same, a Python pull worker (`sdk/python` of " + r.cfg.pythonBeforeRev + ")", thirdCPU: true},
		{key: "pull/python", label: "the same, a Python pull worker (`sdk/python`)", thirdCPU: true},
		{key: "pull/typescript", label: "the same, a TypeScript pull worker (`sdk/typescript` on Node.js)", thirdCPU: true},
		{key: "cluster1", label: "`cluster1`: 3 nodes, 16 shards, batch 10, Redis Cluster of 1 master"},
		{key: "cluster3", label: "`cluster3`: the same on 3 masters"},
	}
}

// span formats the range of a figure over the rounds ("lo - hi").
func span(vals []float64, f func(float64) string) string { return spanSep(vals, f, " - ") }

// tight is span without spaces, for a range inside a sum.
func tight(vals []float64, f func(float64) string) string { return spanSep(vals, f, "-") }

func spanSep(vals []float64, f func(float64) string, sep string) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if math.IsInf(lo, 1) {
		return "-"
	}
	if a, b := f(lo), f(hi); a != b {
		return a + sep + b
	}
	return f(lo)
}

func rate(v float64) string {
	switch {
	case v >= 100_000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

func micros(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func per(v float64) string {
	if v < 0.01 {
		return fmt.Sprintf("%.4f", v)
	}
	if v < 1 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func pick(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// cpuCell is a row's CPU per job: node + Redis (+ the receiver's or the
// pull worker's, with third) = total, each over the rounds.
func cpuCell(ss []sample, third bool) string {
	cpu := tight(pick(ss, func(s sample) float64 { return s.nodeCPU }), micros) + " + " +
		tight(pick(ss, func(s sample) float64 { return s.redisCPU }), micros)
	if third {
		cpu += " + " + tight(pick(ss, func(s sample) float64 { return s.receiverCPU }), micros)
	}
	cpu += " = " + tight(pick(ss, sample.cpu), micros)
	if b := tight(pick(ss, func(s sample) float64 { return s.busiestMasterCPU }), micros); b != "-" {
		cpu += "; busiest master " + b
	}
	return cpu
}

// table prints the markdown tables of the runs.
func (r *report) table() {
	rounds := "one round"
	if r.cfg.rounds > 1 {
		rounds = fmt.Sprintf("ranges over %d rounds", r.cfg.rounds)
	}
	fmt.Printf("| workload (%d jobs, %s) | jobs/s | CPU / job: node + Redis (+ receiver or worker) = total, µs | Redis commands / job | round trips / job |\n", r.cfg.jobs, rounds)
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, rw := range r.rows() {
		ss := r.samples[rw.key]
		if len(ss) == 0 {
			continue
		}
		rates := span(pick(ss, func(s sample) float64 { return s.rate }), rate)
		if enq := span(pick(ss, func(s sample) float64 { return s.enqRate }), rate); enq != "-" {
			rates += " (enqueue " + enq + ")"
		}
		if e2e := span(pick(ss, func(s sample) float64 { return s.endToEnd }), rate); e2e != "-" {
			rates += "; end to end " + e2e
		}
		cpu := cpuCell(ss, rw.thirdCPU)
		label := rw.label
		for _, s := range ss {
			if !s.ok {
				label += " (AUDIT BROKEN)"
				break
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", label, rates, cpu,
			span(pick(ss, func(s sample) float64 { return s.cmds }), per),
			span(pick(ss, func(s sample) float64 { return s.roundTrips }), per))
	}
	r.ratios()
	r.featuresTable()
	if len(r.memory) > 0 {
		fmt.Printf("\n| Redis memory (INFO used_memory, %d queued jobs) | layout 1 | layout 2 |\n| --- | --- | --- |\n", r.cfg.memJobs)
		for _, m := range []struct{ unit, label string }{
			{"B/queued-job", "per queued blank job (ids of 5-10 characters: job-0 to job-999999)"},
			{"B/queued-job-uuid-id", "per queued blank job with a 36-character id (a UUID)"},
			{"B/delayed-job", "per delayed job (due in an hour; ids of 5-10 characters)"},
			{"B/extra-payload", "per extra payload of an id (10 per id)"},
		} {
			cell := func(layout string) string {
				v, ok := r.memory[layout][m.unit]
				if !ok {
					return "-"
				}
				return fmt.Sprintf("%.1f B", v)
			}
			fmt.Printf("| %s | %s | %s |\n", m.label, cell("1"), cell("2"))
		}
	}
}

// ratios prints this release against the previous one and against asynq,
// round by round (each pair ran back to back).
func (r *report) ratios() {
	var lines []string
	pair := func(what, a, b string, f func(x, y sample) float64, format string) {
		xs, ys := r.samples[a], r.samples[b]
		var vals []string
		for i := range min(len(xs), len(ys)) {
			vals = append(vals, fmt.Sprintf(format, f(xs[i], ys[i]))+"x")
		}
		if len(vals) > 0 {
			lines = append(lines, what+": "+strings.Join(vals, ", "))
		}
	}
	faster := func(x, y sample) float64 { return x.rate / y.rate }
	cheaper := func(x, y sample) float64 { return y.cpu() / x.cpu() }
	pair("`lowkiq` jobs/s, this release / previous", "lowkiq/new", "lowkiq/old", faster, "%.2f")
	pair("its CPU per job, previous / this release", "lowkiq/new", "lowkiq/old", cheaper, "%.2f")
	pair("`lowkiq` jobs/s, this release / asynq", "lowkiq/new", "asynq", faster, "%.1f")
	pair("the same with `appendfsync always`", "lowkiq/new/fsync", "asynq/fsync", faster, "%.1f")
	pair("webhook calls/s, this release / previous", "webhook/new", "webhook/old", faster, "%.2f")
	pair("their CPU per call, previous / this release", "webhook/new", "webhook/old", cheaper, "%.2f")
	pair("jobs/s, `cluster3` / `cluster1`", "cluster3", "cluster1", faster, "%.2f")
	if len(lines) > 0 {
		fmt.Printf("\nRatios, round by round: %s.\n", strings.Join(lines, "; "))
	}
	if c1, c3 := r.samples["cluster1"], r.samples["cluster3"]; len(c1) > 0 && len(c3) > 0 {
		var vals []string
		for i := range min(len(c1), len(c3)) {
			if !math.IsNaN(c3[i].busiestMasterCPU) && c3[i].busiestMasterCPU > 0 && c1[i].busiestMasterCPU > 0 {
				vals = append(vals, fmt.Sprintf("%s vs %s jobs/s", rate(1e6/c1[i].busiestMasterCPU), rate(1e6/c3[i].busiestMasterCPU)))
			}
		}
		if len(vals) > 0 {
			fmt.Printf("Redis-bound ceiling with a core per master (1 / busiest master's CPU per job), cluster1 vs cluster3: %s.\n", strings.Join(vals, "; "))
		}
	}
}
