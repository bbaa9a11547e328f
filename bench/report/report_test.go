package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchResultSample: figures per job from `orderly bench --json` of
// either release; a run that does not count round trips shows none.
func TestBenchResultSample(t *testing.T) {
	var res []benchResult
	require.NoError(t, json.Unmarshal([]byte(`[{"scenario":"cluster3","jobs":1000,"process_jobs_per_sec":5000,
		"redis_commands_per_job":0.25,"cpu_seconds":0.004,"redis_cpu_seconds":0.006,
		"redis_cpu_seconds_by_master":{"a":0.001,"b":0.003,"c":0.002},"audit":{"ok":true}}]`), &res))
	s := res[0].sample()
	require.InDelta(t, 4.0, s.nodeCPU, 1e-9)
	require.InDelta(t, 6.0, s.redisCPU, 1e-9)
	require.InDelta(t, 10.0, s.cpu(), 1e-9)
	require.InDelta(t, 3.0, s.busiestMasterCPU, 1e-9)
	require.True(t, math.IsNaN(s.roundTrips))
	require.True(t, s.ok)
	require.Equal(t, "-", span([]float64{s.roundTrips}, per))

	res = nil
	require.NoError(t, json.Unmarshal([]byte(`[{"jobs":100,"round_trips_per_job":0.1,"audit":{"ok":false}}]`), &res))
	s = res[0].sample()
	require.InDelta(t, 0.1, s.roundTrips, 1e-9)
	require.False(t, s.ok)
	require.True(t, math.IsNaN(s.busiestMasterCPU))
}

// TestMemLine reads BenchmarkMemory's result lines.
func TestMemLine(t *testing.T) {
	m := memLine.FindStringSubmatch("BenchmarkMemory/layout=2-2         \t       1\t       235.3 B/delayed-job\t         5.788 B/extra-payload\t       108.8 B/queued-job")
	require.NotNil(t, m)
	require.Equal(t, "2", m[1])
	require.Contains(t, m[2], "108.8 B/queued-job")
	require.Nil(t, memLine.FindStringSubmatch("BenchmarkEnqueue/layout=2-2  1  5 jobs/s"))
}

// TestSpan formats a figure over rounds: one value, or the range.
func TestSpan(t *testing.T) {
	require.Equal(t, "145k", span([]float64{145_336}, rate))
	require.Equal(t, "13.6k - 20.0k", span([]float64{20_045, 13_634}, rate))
	require.Equal(t, "6.9", span([]float64{6.88, math.NaN()}, micros))
	require.Equal(t, "0.0004", per(0.0004))
	require.Equal(t, "-", span(nil, rate))
	require.Equal(t, "6.7-6.8", tight([]float64{6.8, 6.7}, micros))
}

func TestParseFeatures(t *testing.T) {
	out := "BenchmarkProcessRetained/layout=2/batch=1-2 \t    2000\t     11993 jobs/s\t        44.74 lua-us/job\t        13.00 rediscmds/job\n" +
		"BenchmarkEnqueueDedup/call=100/key-dup-2             \t    2000\t    296570 jobs/s\t         1.887 lua-us/job\t         0.2500 rediscmds/job\n" +
		"PASS\n"
	got := parseFeatures(out)
	require.Equal(t, map[string]map[string]float64{
		"BenchmarkProcessRetained/layout=2/batch=1": {"jobs/s": 11993, "lua-us/job": 44.74, "rediscmds/job": 13},
		"BenchmarkEnqueueDedup/call=100/key-dup":    {"jobs/s": 296570, "lua-us/job": 1.887, "rediscmds/job": 0.25},
	}, got)
}

// TestParseSummary reads a pull worker's last line and refuses one that
// handled nothing.
func TestParseSummary(t *testing.T) {
	s, err := parseSummary(`{"jobs": 20001, "leases": 19990}`)
	require.NoError(t, err)
	require.Equal(t, workerSummary{Jobs: 20001, Leases: 19990}, s)
	_, err = parseSummary(`{"jobs": 0, "leases": 0}`)
	require.Error(t, err)
	_, err = parseSummary(`ready`)
	require.Error(t, err)
}

// TestCPUCell: a pull row adds the worker's CPU to the node's and
// Redis's; a row without a third process shows two terms.
func TestCPUCell(t *testing.T) {
	a, b := blank(), blank()
	a.nodeCPU, a.redisCPU, a.receiverCPU = 30, 20, 50
	b.nodeCPU, b.redisCPU, b.receiverCPU = 32, 20, 60
	require.Equal(t, "30.0-32.0 + 20.0 + 50.0-60.0 = 100-112", cpuCell([]sample{a, b}, true))
	c := blank()
	c.nodeCPU, c.redisCPU = 5, 6
	require.Equal(t, "5.0 + 6.0 = 11.0", cpuCell([]sample{c}, false))
}

// TestPullRows: the pull part has a row per worker language, each showing
// the worker's CPU, and the part can be skipped by name.
func TestPullRows(t *testing.T) {
	r := &report{cfg: config{jobs: 20_000, pullConcurrency: 8, pullMaxIDs: 1}}
	got := map[string]row{}
	for _, rw := range r.rows() {
		got[rw.key] = rw
	}
	for _, lang := range pullLangs {
		require.True(t, got["pull/"+lang].thirdCPU, lang)
	}
	require.Contains(t, got["pull/go"].label, "concurrency 8, max_ids 1")
	require.Contains(t, parts, "pull")
}

// TestPullPythonBefore: an older sdk/python gets a row of its own, named
// by its revision, and its worker is told where that SDK is.
func TestPullPythonBefore(t *testing.T) {
	r := &report{cfg: config{jobs: 20_000, pullConcurrency: 8, pullMaxIDs: 1, root: "/repo",
		pythonBefore: "/tmp/py-before/sdk/python", pythonBeforeRev: "abc1234"}}
	found := false
	for _, rw := range r.rows() {
		if rw.key == "pull/python-before" {
			found = true
			require.True(t, rw.thirdCPU)
			require.Contains(t, rw.label, "abc1234")
		}
	}
	require.True(t, found)
	if cmd, why := r.pullCommand("python-before", "http://127.0.0.1:1"); cmd != nil {
		require.Equal(t, []string{"--sdk", "/tmp/py-before/sdk/python"}, cmd.Args[len(cmd.Args)-2:])
	} else {
		t.Logf("no python3 here: %s", why)
	}
}
