package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// A misconfigured member (docs/contract.md §2.4): its Redis URL names a
// server that does not answer, yet it joins the cluster and advertises the
// queue, so the placement gives it half the shards, which it never serves.
// The healthy node serves those shards too once their leases have been
// free for lease_ttl: every job is processed, every lease is the healthy
// node's, and it reports ready.
func TestClusterServesTheShardsOfAMisconfiguredMember(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	wrong := redistest.NewServer(t, redistest.Options{})
	wrong.Stop(t) // the misconfigured member's Redis: nothing answers there
	rcv := nodetest.NewReceiver(t, func(*webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	const shards = 8
	cfg := fmt.Sprintf(`
queues:
  - name: orders
    shards: %d
    handler: {type: http, url: %q, timeout: 10s}
`, shards, rcv.URL)
	good := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg})
	good.WaitReady()
	bad := nodetest.Start(t, nodetest.Options{Redis: wrong.URL(), Config: cfg, Args: []string{"--join", good.Gossip}})
	eventually(t, "both members alive in the healthy node's view", func() bool {
		v, ok := viewOf(t, good)
		return ok && alive(v)[bad.Name] && alive(v)[good.Name]
	})

	// One id per shard, enqueued through the healthy node.
	var body []map[string]any
	for i := 0; len(body) < shards; i++ {
		id := fmt.Sprint("id-", i)
		if persistence.ShardOf(id, shards) == len(body) {
			body = append(body, map[string]any{"id": id})
		}
	}
	b, err := json.Marshal(body)
	require.NoError(t, err)
	code, out := good.Do("POST", "/api/v1/queues/orders/jobs", b)
	require.Equal(t, http.StatusAccepted, code, "%s", out)

	waitEmpty(t, good, rcv)
	require.Len(t, rcv.Calls(), shards, "every shard's job was delivered")
	eventually(t, "the healthy node holds every lease and is ready", func() bool {
		v, ok := viewOf(t, good)
		if !ok || !servedBy(v, good.Name) {
			return false
		}
		code, _ := good.Do("GET", "/readyz", nil)
		return code == http.StatusOK
	})
	require.Contains(t, good.Logs(), "serving a shard no node serves")
}
