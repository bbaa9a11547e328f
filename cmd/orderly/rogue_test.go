package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// A node on another Redis that joins a node's gossip (a rogue or
// misconfigured peer) is a foreign member: it takes none of the first
// node's shards, which keeps serving all of them, stays truthfully ready
// and handles every job.
func TestRogueMemberOfAnotherStore(t *testing.T) {
	t.Parallel()
	cfg := "queues:\n  - name: orders\n    shards: 6\n    handler: {type: log}\n"
	srvA := redistest.NewServer(t, redistest.Options{})
	srvB := redistest.NewServer(t, redistest.Options{})
	a := nodetest.Start(t, nodetest.Options{Redis: srvA.URL(), Config: cfg})
	a.WaitReady()
	b := nodetest.Start(t, nodetest.Options{Redis: srvB.URL(), Config: cfg, Args: []string{"--join", a.Gossip}})
	b.WaitReady()

	state := func(n *nodetest.Node, name string) string {
		v, ok := viewOf(t, n)
		if !ok {
			return ""
		}
		for _, m := range v.Members {
			if m.Name == name {
				return m.State
			}
		}
		return ""
	}
	eventually(t, "each sees the other as foreign", func() bool {
		return state(a, b.Name) == "foreign" && state(b, a.Name) == "foreign"
	})
	require.Contains(t, a.Logs(), "a member of another store joined the gossip")

	var jobs []map[string]any
	for i := range 20 {
		jobs = append(jobs, map[string]any{"id": fmt.Sprint("job-", i), "payload": "x"})
	}
	body, err := json.Marshal(jobs)
	require.NoError(t, err)
	code, out := a.Do("POST", "/api/v1/queues/orders/jobs", body)
	require.Equal(t, 202, code, string(out))
	eventually(t, "a handled every job", func() bool {
		for i := range 20 {
			if !strings.Contains(a.Logs(), fmt.Sprintf("job_id=job-%d ", i)) {
				return false
			}
		}
		return true
	})
	for i := range 20 {
		require.NotContains(t, b.Logs(), fmt.Sprintf("job_id=job-%d ", i))
	}
	// Throughout, a serves all its shards and says it is ready.
	for range 10 {
		v, ok := viewOf(t, a)
		require.True(t, ok)
		require.True(t, servedBy(v, a.Name), "%+v", owners(v))
		code, out = a.Do("GET", "/readyz", nil)
		require.Equal(t, 200, code, string(out))
	}
	code, out = a.Do("GET", "/api/v1/queues/orders", nil)
	require.Equal(t, 200, code)
	var q apiv1.Queue
	require.NoError(t, json.Unmarshal(out, &q))
	require.Zero(t, q.Length+q.Busy)
}
