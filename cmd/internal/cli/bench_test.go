package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/bench"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

func TestBench(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	code, out, errOut := runCLI([]string{"bench", "--redis", srv.URL(), "--scenario", "lowkiq,batch10", "--jobs", "300", "--json"}, nil)
	require.Equal(t, ExitOK, code, errOut)
	var results []bench.Result
	require.NoError(t, json.Unmarshal([]byte(out), &results))
	require.Len(t, results, 2)
	for _, r := range results {
		require.True(t, r.Audit.OK)
		require.Equal(t, 300, r.Audit.Acked)
	}

	memProf := filepath.Join(t.TempDir(), "mem.prof")
	code, out, errOut = runCLI([]string{"bench", "--redis", srv.URL(), "--scenario", "batch100", "--jobs", "300", "--memprofile", memProf}, nil)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "SCENARIO")
	require.Contains(t, out, "batch100")
	prof, err := os.ReadFile(memProf)
	require.NoError(t, err)
	require.Greater(t, len(prof), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, prof[:2], "a gzipped pprof profile")

	code, _, errOut = runCLI([]string{"bench", "--redis", srv.URL(), "--scenario", "nope"}, nil)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `unknown scenario "nope"`)
	code, _, _ = runCLI([]string{"bench", "--jobs", "0"}, nil)
	require.Equal(t, ExitUsage, code)
	code, out, _ = runCLI([]string{"bench", "--list"}, nil)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "failover")
}

func TestBenchIdle(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	code, out, errOut := runCLI([]string{"bench", "--redis", srv.URL(), "--scenario", "idle5", "--idle", "2s"}, nil)
	require.Equal(t, ExitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"SCENARIO", "QUEUES", "SHARDS", "MEASURED", "RT/MIN", "NODE", "CMDS/MIN", "REDIS", "CMDS/MIN", "NODE", "CPU", "REDIS", "CPU"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Equal(t, []string{"idle5", "1", "5", "2s"}, row[:4], out)
	rt, err := strconv.ParseFloat(row[4], 64)
	require.NoError(t, err)
	require.Greater(t, rt, 0.0, "an idle node still renews its leases")

	code, _, errOut = runCLI([]string{"bench", "--idle", "10ms"}, nil)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--idle must be at least 1s")
}
