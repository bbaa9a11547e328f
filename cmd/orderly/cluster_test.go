package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

func viewOf(t *testing.T, n *nodetest.Node) (apiv1.Cluster, bool) {
	code, b := n.Do("GET", "/api/v1/cluster", nil)
	var v apiv1.Cluster
	if code != 200 || json.Unmarshal(b, &v) != nil {
		return v, false
	}
	return v, true
}

// owners counts the shards each node holds, as the leases in Redis say.
func owners(v apiv1.Cluster) map[string]int {
	out := map[string]int{}
	for _, s := range v.Shards {
		out[s.Owner]++
	}
	return out
}

func alive(v apiv1.Cluster) map[string]bool {
	out := map[string]bool{}
	for _, m := range v.Members {
		if m.State == "alive" {
			out[m.Name] = true
		}
	}
	return out
}

// servedBy reports whether every shard is held by one of names, each of
// which holds at least one.
func servedBy(v apiv1.Cluster, names ...string) bool {
	o := owners(v)
	total := 0
	for _, n := range names {
		if o[n] == 0 {
			return false
		}
		total += o[n]
	}
	return total == len(v.Shards) && len(v.Shards) > 0
}

// balanced reports whether every shard is held by one of names, each
// holding its even share (floor or ceiling of shards/names).
func balanced(v apiv1.Cluster, names ...string) bool {
	if !servedBy(v, names...) {
		return false
	}
	o := owners(v)
	lo, hi := len(v.Shards)/len(names), (len(v.Shards)+len(names)-1)/len(names)
	for _, n := range names {
		if o[n] < lo || o[n] > hi {
			return false
		}
	}
	return true
}

const clusterShards = 16

func clusterConfig(url string) string {
	return fmt.Sprintf(`
queues:
  - name: orders
    shards: %d
    batch_size: 5
    handler: {type: http, url: %q, timeout: 10s}
`, clusterShards, url)
}

// load enqueues rising scores to ids through the nodes' HTTP API until
// Stop; the first node that answers takes a round.
func load(nodes []*nodetest.Node, ids int) *history.Producer {
	return history.Produce(ids, 10*time.Millisecond, func(_ context.Context, jobs []persistence.NewJob) error {
		body := make([]map[string]any, len(jobs))
		for i, j := range jobs {
			body[i] = map[string]any{"id": j.ID, "payload": json.RawMessage(j.Payload), "score": *j.Score}
		}
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		return sendRound(nodes, b)
	})
}

// sendRound posts one round of jobs to the first node that takes it. A
// node that answers with a refusal, or that refuses the connection, did not
// store the round, so the next one is tried; a node whose answer was lost
// may have stored it, so the round is not sent again (that would enqueue its
// payloads twice) but reported as failed: the producer counts it as unsure.
func sendRound(nodes []*nodetest.Node, b []byte) error {
	for _, n := range nodes {
		code, _, err := n.Try("POST", "/api/v1/queues/orders/jobs", b)
		switch {
		case code == http.StatusAccepted:
			return nil
		case err != nil && !errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("answer lost, the round may have landed: %w", err)
		}
	}
	return errors.New("no node took the round")
}

// waitEmpty waits until the queue is empty, nothing is in flight and the
// receiver answered every delivery, so that its record is complete.
func waitEmpty(t *testing.T, n *nodetest.Node, rcv *webhooktest.Receiver) {
	t.Helper()
	eventually(t, "queue empty, nothing in flight, every delivery answered", func() bool {
		code, b := n.Do("GET", "/api/v1/queues/orders", nil)
		var q apiv1.Queue
		return code == 200 && json.Unmarshal(b, &q) == nil && q.Length == 0 && q.Busy == 0 && rcv.Active() == 0
	})
}

// stopAndAudit stops the producer, waits until the queue drains (as n
// sees it) and checks the receiver's history against what the producer
// enqueued: no overlap, no disorder, nothing lost.
func stopAndAudit(t *testing.T, producer *history.Producer, n *nodetest.Node, rcv *webhooktest.Receiver) history.Report {
	t.Helper()
	producer.Stop()
	waitEmpty(t, n, rcv)
	rep := history.Check(history.FromWebhook(rcv.Calls()), producer.Enqueued(), nil)
	t.Log(rep.String())
	require.True(t, rep.OK(), rep.String())
	return rep
}

// TestClusterJoinSplitAndLeave: three nodes join through a seed and split the
// shards; a fourth joins and takes its share; one leaves gracefully under
// load and its shards move with no redelivery.
func TestClusterJoinSplitAndLeave(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	rcv := nodetest.NewReceiver(t, func(*webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{Delay: 5 * time.Millisecond} })
	cfg := clusterConfig(rcv.URL)
	trio := startJoined(t, 3, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n1, n2, n3 := trio[0], trio[1], trio[2]
	eventually(t, "3 nodes split the shards evenly", func() bool {
		v, ok := viewOf(t, n3)
		return ok && len(alive(v)) == 3 && balanced(v, n1.Name, n2.Name, n3.Name)
	})
	v, _ := viewOf(t, n1)
	t.Logf("3 nodes: %v", owners(v))

	n4 := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Args: []string{"--join", n1.Gossip}})
	eventually(t, "the 4th node gets its share", func() bool {
		v, ok := viewOf(t, n1)
		return ok && len(alive(v)) == 4 && balanced(v, n1.Name, n2.Name, n3.Name, n4.Name)
	})
	v, _ = viewOf(t, n1)
	t.Logf("4 nodes: %v", owners(v))

	producer := load([]*nodetest.Node{n1, n3, n4}, 20)
	time.Sleep(time.Second)
	n2.Signal(syscall.SIGTERM)
	require.Equal(t, 0, n2.Wait(30*time.Second))
	eventually(t, "n2's shards moved", func() bool {
		v, ok := viewOf(t, n1)
		return ok && balanced(v, n1.Name, n3.Name, n4.Name)
	})
	time.Sleep(time.Second)
	rep := stopAndAudit(t, producer, n1, rcv)
	require.Zero(t, rep.Duplicates, "a graceful leave redelivers nothing")
}

// TestClusterFailoverAfterSigkill kills a node under load: its shards are
// served elsewhere within seconds (printed), handlers of one id never
// overlap, each id's payloads arrive in score order, nothing is lost.
func TestClusterFailoverAfterSigkill(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rnd := newChaosRand(t).intN
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Delay: time.Duration(rnd(20)) * time.Millisecond}
		if rnd(20) == 0 {
			a.Failed = map[string]string{c.Request.Jobs[0].ID: "random failure"}
		}
		return a
	})
	cfg := clusterConfig(rcv.URL)
	cfg += "    retry: {policy: linear, base: 50ms}\n"
	trio := startJoined(t, 3, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n1, n2, n3 := trio[0], trio[1], trio[2]
	eventually(t, "3 nodes split the shards", func() bool {
		v, ok := viewOf(t, n1)
		return ok && len(alive(v)) == 3 && servedBy(v, n1.Name, n2.Name, n3.Name)
	})

	producer := load([]*nodetest.Node{n1, n3}, 30)
	time.Sleep(1500 * time.Millisecond)

	killed := time.Now()
	n2.Kill()
	var failover time.Duration
	for {
		v, ok := viewOf(t, n1)
		if ok && servedBy(v, n1.Name, n3.Name) {
			failover = time.Since(killed)
			break
		}
		require.Less(t, time.Since(killed), 30*time.Second, "n2's shards never served elsewhere")
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("failover: every shard of the killed node served again %s after SIGKILL (lease_ttl 3s)", failover.Round(time.Millisecond))
	time.Sleep(time.Second)
	stopAndAudit(t, producer, n1, rcv)
}
