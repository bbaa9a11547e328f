package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// docs/contract.md §3.17, end to end: orderly queues reshard --wait against
// a running node returns once the node drained the old shards by itself
// (the binary's store wrappers keep the store's resharding), and every
// queued id is still queued, under the new count.
func TestReshardCommand(t *testing.T) {
	t.Parallel()
	n := nodetest.Start(t, nodetest.Options{})
	n.WaitReady()
	var jobs []string
	for i := range 50 {
		jobs = append(jobs, fmt.Sprintf(`{"id": "later-%d", "perform_in": 3600}`, i))
	}
	code, out := post(t, n, "/api/v1/queues/default/jobs", "["+strings.Join(jobs, ",")+"]")
	require.Equal(t, 202, code, "%v", out)
	queue := func() apiv1.Queue {
		code, b := n.Do("GET", "/api/v1/queues/default", nil)
		require.Equal(t, 200, code, "%s", b)
		var q apiv1.Queue
		require.NoError(t, json.Unmarshal(b, &q), "%s", b)
		return q
	}
	to := queue().Shards + 3

	// Bounded: without a node that drains, --wait would wait forever.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodetest.Binary(t), "queues", "reshard", "default", "--shards", fmt.Sprint(to), "--wait")
	cmd.Env = append(os.Environ(), "ORDERLY_HTTP="+n.HTTP)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "moved/left ")
	require.True(t, strings.HasSuffix(stdout.String(), fmt.Sprintf("default resharded: %d shards\n", to)), stdout.String())

	q := queue()
	require.Nil(t, q.Reshard)
	require.Equal(t, to, q.Shards)
	require.EqualValues(t, 50, q.Length, "every queued id moved, none lost")
	code, b := n.Do("GET", "/api/v1/queues/default/jobs/later-7", nil)
	require.Equal(t, 200, code, "%s", b)
}
