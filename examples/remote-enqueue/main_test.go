package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/nodetest"
	"github.com/orderlyhq/orderly/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.AtExit(nodetest.Cleanup)
	redistest.Main(m)
}

// TestRemoteEnqueue runs the example against a node process: the job goes
// in by actor message through protoactor remote and the node handles it.
func TestRemoteEnqueue(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Options{})
	port, err := redistest.FreePort()
	require.NoError(t, err)
	actorAddr := "127.0.0.1:" + itoa(port)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Args: []string{"--actor-addr", actorAddr}})
	n.WaitReady()

	var out bytes.Buffer
	require.NoError(t, run([]string{"--http", strings.TrimPrefix(n.HTTP, "http://"), "--id", "order-9", "--payload", `{"state":"paid"}`}, &out))
	require.Equal(t, "enqueued 1 job(s) into default through "+actorAddr+"\n", out.String())
	require.Eventually(t, func() bool { return strings.Contains(n.Logs(), "job_id=order-9") }, 10*time.Second, 10*time.Millisecond)

	err = run([]string{"--actor", actorAddr, "--queue", "nope", "--id", "x"}, &out)
	require.ErrorContains(t, err, "CODE_UNKNOWN_QUEUE")
	err = run([]string{"--actor", actorAddr, "--id", ""}, &out)
	require.ErrorContains(t, err, "--id is required")
}

func itoa(n int) string { return strconv.Itoa(n) }
