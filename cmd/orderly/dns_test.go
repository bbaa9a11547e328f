package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/chaos"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// writeHosts replaces the hosts file of the chaos build's resolver at once
// (a rename), so that a node never reads half of it.
func writeHosts(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// TestClusterFormsThroughDNS: three node processes whose only join setting
// is one SRV name (dns+srv:, answered from a hosts file through the chaos
// build's resolver, as a Kubernetes headless Service would) start while
// the name resolves to nothing, each alone; once it names all three they
// form one cluster and split the shards. A SIGKILLed node's shards are then
// served by the other two (the time is printed).
func TestClusterFormsThroughDNS(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	rcv := nodetest.NewReceiver(t, func(*webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	hosts := filepath.Join(t.TempDir(), "hosts")
	const name = "_gossip._tcp.orderly.test"
	base := nodetest.Options{
		Redis: srv.URL(), Config: clusterConfig(rcv.URL), Chaos: true,
		Env:  []string{chaos.HostsEnv + "=" + hosts},
		Args: []string{"--lease-ttl", "1s", "--shutdown-timeout", "5s", "--join", "dns+srv:" + name},
	}
	nodes := make([]*nodetest.Node, 3)
	var answers []string
	for i := range nodes {
		o := base
		gp, err := redistest.FreePort()
		require.NoError(t, err)
		o.Name, o.GossipPort = fmt.Sprintf("d%d", i+1), gp
		nodes[i] = nodetest.Start(t, o)
		answers = append(answers, nodes[i].Gossip)
	}
	for _, n := range nodes { // alone: not ready, as the leases of its shards are held by the first
		v, ok := viewOf(t, n)
		require.True(t, ok)
		require.Len(t, alive(v), 1, "%s is alone while the name resolves to nothing", n.Name)
	}

	listed := time.Now()
	writeHosts(t, hosts, name+" "+strings.Join(answers, " ")+"\n")
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	for _, n := range nodes {
		eventually(t, n.Name+" sees one cluster of 3 serving every shard", func() bool {
			v, ok := viewOf(t, n)
			return ok && len(alive(v)) == 3 && servedBy(v, n1.Name, n2.Name, n3.Name)
		})
	}
	t.Logf("one cluster serving every shard %s after the name listed the nodes", time.Since(listed).Round(time.Millisecond))
	for _, n := range nodes {
		n.WaitReady()
	}

	killed := time.Now()
	n2.Kill()
	eventually(t, "the killed node's shards served by the others", func() bool {
		v, ok := viewOf(t, n1)
		return ok && servedBy(v, n1.Name, n3.Name)
	})
	t.Logf("failover: every shard of the killed node served again %s after SIGKILL (lease_ttl 1s)", time.Since(killed).Round(time.Millisecond))
}
