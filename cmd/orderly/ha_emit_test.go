package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// emitHARun runs three nodes in the replicated mode with a stateful queue,
// orders, whose calls emit each payload they handle into shipments, and a
// receiver that records every delivery of both; killRedis SIGKILLs a Redis
// master under load (issue #30: while a promoted master had no replica in
// sync, the relay's enqueues reached the master, their WAIT fell short,
// and every retry of the relay handed the emits to shipments again).
func emitHARun(t *testing.T, url string, killRedis func(note func(string, ...any))) {
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		if c.Request.Queue == "shipments" {
			return webhooktest.Answer{Delay: time.Millisecond}
		}
		a := webhooktest.Answer{Delay: 2 * time.Millisecond}
		for _, j := range c.Request.Jobs {
			for _, p := range j.Payloads {
				a.Emit = append(a.Emit, wire.Emit{From: j.ID, Queue: "shipments", ID: j.ID, Payload: json.RawMessage(p.Data)})
			}
		}
		return a
	})
	cfg := fmt.Sprintf(`
queues:
  - name: orders
    shards: 12
    batch_size: 4
    state: true
    retry: {policy: linear, base: 20ms}
    handler: {type: http, url: %q, timeout: 5s}
  - name: shipments
    shards: 12
    batch_size: 4
    handler: {type: http, url: %q, timeout: 5s}
`, rcv.URL, rcv.URL)
	tl := newTimeline(t)
	note := tl.note
	_, nodes := startTrio(t, "m", nodetest.Options{Redis: url, Config: cfg, Args: []string{"--durability", "replicated"}}, nil)
	note("3 nodes ready on %s", redisurl.Redact(url))

	u, err := redisurl.Parse(url)
	require.NoError(t, err)
	rdb := u.NewClient()
	t.Cleanup(func() { rdb.Close() })
	store, err := redisstore.New(rdb, &redisstore.Config{Durability: redisstore.DurabilityReplicated})
	require.NoError(t, err)
	producer := produceOrders(t, store)
	time.Sleep(2 * time.Second)
	killRedis(note)
	time.Sleep(2 * time.Second)
	producer.Stop()
	note("producer stopped")
	for _, n := range nodes {
		n.WaitReady()
	}
	waitDrained(t, store, rcv, "orders", 90*time.Second, tl)
	// The last emits are relayed after orders drained: wait until every
	// payload orders acknowledged reached shipments, then for shipments
	// to drain.
	var ohist, shist []history.Call
	var srep history.Report
	emitted := map[string][]string{}
	acks := map[string]int{} // id + payload -> acknowledgements in orders
	split := func() {
		var orders, shipments []webhooktest.Call
		for _, c := range rcv.Calls() {
			if c.Request.Queue == "shipments" {
				shipments = append(shipments, c)
			} else {
				orders = append(orders, c)
			}
		}
		ohist, shist = history.FromWebhook(orders), history.FromWebhook(shipments)
		// What orders acknowledged is what it emitted (a call that did
		// not commit emitted nothing, and is delivered again).
		clear(emitted)
		clear(acks)
		for _, c := range ohist {
			if !c.Acked {
				continue
			}
			for _, p := range c.Payloads {
				if acks[c.ID+" "+p.Data]++; acks[c.ID+" "+p.Data] == 1 {
					emitted[c.ID] = append(emitted[c.ID], p.Data)
				}
			}
		}
		srep = history.Check(shist, emitted, nil)
	}
	require.Eventually(t, func() bool { split(); return len(srep.Lost) == 0 }, 90*time.Second, 100*time.Millisecond,
		"every emit reaches shipments: %s\ntimeline:\n%s", srep, tl)
	waitDrained(t, store, rcv, "shipments", 90*time.Second, tl)
	split()

	enqueued := producer.Enqueued()
	orep := history.Check(ohist, enqueued, nil)
	require.True(t, orep.OK(), "orders: %s\ntimeline:\n%s", orep, tl)
	require.GreaterOrEqual(t, orep.Acked, countPayloads(enqueued), "every acknowledged payload was handled")
	require.Empty(t, srep.Overlaps, "shipments: %s", srep)
	require.Empty(t, srep.Lost, "shipments: %s", srep)
	require.Empty(t, srep.Unexplained, "shipments: %s", srep)

	// Every delivery counts, acknowledged or not: a payload reaches
	// shipments at most once per lease that held it, per time orders
	// committed its emit.
	perLease := map[string]int{}
	perPayload := map[string]int{}
	worst, worstKey := 0, ""
	for _, c := range shist {
		for _, p := range c.Payloads {
			k := c.ID + " " + p.Data
			perPayload[k]++
			if perPayload[k] > worst {
				worst, worstKey = perPayload[k], k
			}
			e, ok := history.Epoch(c.Delivery)
			require.True(t, ok, "delivery %q names its lease", c.Delivery)
			lk := fmt.Sprintf("%s@%d", k, e)
			perLease[lk]++
			require.LessOrEqual(t, perLease[lk], max(acks[k], 1), "payload %s delivered again under lease epoch %d\ntimeline:\n%s", k, e, tl)
		}
	}
	repeats := 0
	for _, n := range perPayload {
		repeats += n - 1
	}
	t.Logf("orders: %s\nshipments: %s\nshipments: %d payloads, %d repeated deliveries, at most %d of one payload (%s)\ntimeline:\n%s",
		orep, srep, len(perPayload), repeats, worst, worstKey, tl)
}

// TestHAClusterEmitsOnce runs emitHARun on a Redis Cluster of three masters
// with one replica each and kills a master; its replica, once promoted,
// has no replica of its own for 8 s, as when the old master's host takes
// time to come back.
func TestHAClusterEmitsOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("HA chaos test: skipped with -short")
	}
	if redisserver.Binary() == "" || redisserver.CLI() == "" {
		t.Skip("needs redis-server and redis-cli")
	}
	c, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: 3, Replicas: 1})
	require.NoError(t, err)
	defer c.Close()
	url := "redis+cluster://" + strings.Join(c.Addrs(), ",")
	emitHARun(t, url, func(note func(string, ...any)) { killClusterMaster(t, c, note, 8*time.Second) })
}

// TestHASentinelEmitsOnce runs emitHARun on a master with one replica
// behind three sentinels and kills the master; the promoted replica has no
// replica of its own for 8 s.
func TestHASentinelEmitsOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("HA chaos test: skipped with -short")
	}
	if redisserver.Binary() == "" {
		t.Skip("needs redis-server")
	}
	set, err := redisserver.StartSentinel(redisserver.SentinelOptions{Replicas: 1, AOF: true})
	require.NoError(t, err)
	defer set.Close()
	ctx := context.Background()
	emitHARun(t, set.URL(), func(note func(string, ...any)) {
		old, err := set.Master(ctx)
		require.NoError(t, err)
		note("SIGKILL Redis master %s", old.Addr())
		old.Kill()
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		m, err := set.WaitFailover(wctx, old)
		require.NoError(t, err)
		note("Sentinel promoted %s", m.Addr())
		time.Sleep(8 * time.Second)
		require.NoError(t, old.Restart())
		note("the old master is back, as a replica")
	})
}
