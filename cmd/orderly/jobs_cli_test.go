package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	root "github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// orderly runs the binary's subcommand args against node n, with stdin
// /dev/null (a character device that is not a terminal), and returns its
// exit code, stdout and stderr.
func orderly(t *testing.T, n *nodetest.Node, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(nodetest.Binary(t), args...)
	cmd.Env = append(os.Environ(), "ORDERLY_HTTP="+n.HTTP)
	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, &out, &errOut
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errOut.String()
}

// TestJobCommands drives the one-job actions and the queue commands of the
// binary against a running node (docs/contract.md §3.9, §6.5).
func TestJobCommands(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{})
	n.WaitReady()
	code, out := post(t, n, "/api/v1/queues/default/jobs",
		`[{"id": "later", "perform_in": 3600}, {"id": "doomed", "payload": {"n": 1}, "perform_in": 3600}]`)
	require.Equal(t, 202, code, "%v", out)

	code, stdout, stderr := orderly(t, n, "jobs", "kill", "--queue", "default", "doomed")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "killed doomed\n", stdout)
	code, stdout, stderr = orderly(t, n, "morgue", "list", "--queue", "default", "--error", "KILLED", "--json")
	require.Equal(t, 0, code, stderr)
	var page struct {
		Entries []struct{ ID, Error string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &page), stdout)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "doomed", page.Entries[0].ID)

	code, stdout, stderr = orderly(t, n, "jobs", "perform-now", "--queue", "default", "later")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "due now later\n", stdout)
	eventually(t, "the log handler runs it", func() bool { return bytes.Contains([]byte(n.Logs()), []byte("job_id=later")) })

	// Errors: with --json, one object on stderr and nothing on stdout.
	code, stdout, stderr = orderly(t, n, "jobs", "get", "--queue", "default", "--json", "nope")
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	var ej struct {
		Error    string `json:"error"`
		Status   int    `json:"status"`
		ExitCode int    `json:"exit_code"`
	}
	require.NoError(t, json.Unmarshal([]byte(stderr), &ej), stderr)
	require.Equal(t, 404, ej.Status)
	require.Equal(t, 1, ej.ExitCode)

	// stdin is /dev/null, not a terminal: nothing to confirm with.
	code, _, stderr = orderly(t, n, "queues", "delete-failed", "--queue", "default")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "confirm with --yes (stdin is not a terminal to ask)")
	code, stdout, stderr = orderly(t, n, "queues")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "default")
}

// The binary has one version: what orderly version prints is what a
// running node advertises to the cluster (orderly members, and the
// dashboard through /api/v1/cluster) and labels orderly_build_info with.
// (.ci/guard checks that a version stamped by make build reaches the same
// places.)
func TestOneVersion(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{})
	n.WaitReady()

	code, stdout, stderr := orderly(t, n, "version", "--json")
	require.Equal(t, 0, code, stderr)
	var v struct{ Version string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
	require.Equal(t, root.Version, v.Version, "the binary prints the library's version")

	code, stdout, stderr = orderly(t, n, "members", "--json")
	require.Equal(t, 0, code, stderr)
	var c apiv1.Cluster
	require.NoError(t, json.Unmarshal([]byte(stdout), &c), stdout)
	require.Len(t, c.Members, 1)
	require.Equal(t, v.Version, c.Members[0].Version, "the node advertises it")

	code, metrics := n.Do("GET", "/metrics", nil)
	require.Equal(t, 200, code)
	require.Regexp(t, `(?m)^orderly_build_info\{goversion="[^"]+",version="`+regexp.QuoteMeta(v.Version)+`"\} 1$`, string(metrics))
}
