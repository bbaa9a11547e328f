package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// chaosNode is one node of the chaos test and how to start it again.
type chaosNode struct {
	opts  nodetest.Options
	node  *nodetest.Node
	proxy *redistest.Proxy // between the node and Redis
}

// TestChaos runs three node processes (three calls of a shard's window at
// once) under continuous load while faults
// happen: SIGKILL and restart of a node (twice), a graceful restart, a
// redis-server restart (AOF, appendfsync always), a Redis outage (every
// node's connections cut through a proxy), and a gossip partition of one
// node. Handlers fail and stall at random, and choose outcomes per payload
// (snooze, dead, discard: mixer); the producer sends some jobs with dedup
// keys and repeats them (the queue has a dedup_window); an operator cancels
// random ids through random nodes (operator). At the end the recorded
// history must show that nothing acknowledged to the producer was lost
// (each payload processed, in the morgue, or discarded by the receiver's
// answer; those answered dead in the morgue), that no two handler calls of
// one id overlapped, that each id's payloads arrived in score order, that
// nothing settled for good was delivered again under the same lease, that
// no repeat was stored, that nothing stored before a cancel was delivered
// after it (auditCancels), and that the counters agree with the records
// (counterBounds). ORDERLY_CHAOS_SEED reproduces a run; ORDERLY_CHAOS_ROUNDS
// runs the whole list of faults that many times (default 1, make soak).
func TestChaos(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	rounds := envRounds(t, "ORDERLY_CHAOS_ROUNDS", 1)
	rng := newChaosRand(t)
	rnd := rng.intN

	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	mix := newMixer()
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Delay: time.Duration(rnd(10)) * time.Millisecond}
		if rnd(50) == 0 {
			a.Delay = 300 * time.Millisecond // a slow handler
		}
		failSome(&a, c, rnd, 20)
		mix.choose(&a, c)
		return a
	})
	// Three calls of a shard's window at once (concurrent_calls): calls of
	// one id must still never overlap, whatever the faults.
	cfg := ordersConfig(rcv.URL, 8, "5s") + "    dedup_window: 1m\n    concurrent_calls: 3\n"

	tl := newTimeline(t)
	note := tl.note
	proxies := make([]*redistest.Proxy, 3)
	opts, started := startTrio(t, "c", nodetest.Options{Config: cfg, Chaos: true}, func(i int, o *nodetest.Options) {
		proxies[i] = redistest.NewProxy(t, srv.Addr())
		o.Redis = "redis://" + proxies[i].Addr + "/0"
	})
	nodes := make([]*chaosNode, len(started))
	for i, n := range started {
		nodes[i] = &chaosNode{opts: opts[i], proxy: proxies[i], node: n}
	}
	note("3 nodes ready")

	// The producer writes straight to Redis (not through the proxies):
	// what it got an OK for must be handled or in the morgue at the end.
	store := directStore(t, srv.Addr())
	producer := produceKeyed(t, store)
	urls := make([]string, len(opts))
	for i, o := range opts {
		urls[i] = fmt.Sprintf("http://127.0.0.1:%d", o.HTTPPort)
	}
	op := startOperator(urls, 40, rnd, note)

	pick := func() *chaosNode { return nodes[rnd(len(nodes))] }
	sigkill := func() { // SIGKILL and restart
		n := pick()
		note("SIGKILL %s", n.opts.Name)
		n.node.Kill()
		time.Sleep(time.Duration(500+rnd(1500)) * time.Millisecond)
		n.node = nodetest.Start(t, n.opts)
		note("%s restarted", n.opts.Name)
	}
	faults := []func(){
		sigkill,
		sigkill, // again
		func() { // graceful restart
			n := pick()
			note("SIGTERM %s", n.opts.Name)
			n.node.Signal(syscall.SIGTERM)
			require.Equal(t, 0, n.node.Wait(30*time.Second), "graceful stop exits 0")
			n.node = nodetest.Start(t, n.opts)
			note("%s restarted", n.opts.Name)
		},
		func() { // redis-server restart (AOF, appendfsync always)
			note("redis-server SIGKILL")
			srv.Kill(t)
			time.Sleep(time.Duration(200+rnd(800)) * time.Millisecond)
			srv.Start(t)
			note("redis-server restarted")
		},
		func() { // Redis outage: every node's connections cut
			note("Redis outage: every node cut off")
			for _, n := range nodes {
				n.proxy.Cut()
			}
			time.Sleep(time.Duration(2000+rnd(2000)) * time.Millisecond)
			for _, n := range nodes {
				n.proxy.Restore(t)
			}
			note("Redis reachable again")
		},
		func() { // gossip partition of one node
			n := pick()
			note("gossip partition: %s cut off", n.opts.Name)
			n.node.Signal(syscall.SIGUSR1)
			time.Sleep(time.Duration(3000+rnd(2000)) * time.Millisecond)
			n.node.Signal(syscall.SIGUSR2)
			note("gossip partition healed")
		},
	}
	time.Sleep(2 * time.Second)
	for r := 0; r < rounds; r++ {
		rng.shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
		for _, f := range faults {
			f()
			time.Sleep(time.Duration(2000+rnd(2000)) * time.Millisecond)
		}
	}
	cancels := op.Stop()
	producer.Stop()
	note("operator and producer stopped")

	// Drain: every node ready, the queue empty, nothing in flight.
	for _, n := range nodes {
		n.node.WaitReady()
	}
	waitDrained(t, store, rcv, "orders", 60*time.Second, tl)

	morgue := morgueOf(t, store, "orders")
	enqueued, unsure := producer.Enqueued(), producer.Unsure()
	total := countPayloads(enqueued)
	calls := history.FromWebhook(rcv.Calls())
	rep := history.Check(calls, enqueued, morgue)
	if n := rep.Explain(abortedByCancel(calls, cancels)); n > 0 {
		t.Logf("%d payloads delivered again under the same lease after a cancel aborted the call that had them answered", n)
	}
	keyed, repeats, dups, mismatches := producer.Dedup()
	t.Logf("seed %d: %d payloads acknowledged to the producer (%d batches refused during outages; %d keyed, %d repeats, %d duplicates), %d payloads of %d ids in the morgue, %s; %s\ntimeline:\n%s",
		rng.seed, total, producer.Refused(), keyed, repeats, dups, countPayloads(morgue), len(morgue), cancelSummary(cancels), rep.String(), tl)
	require.True(t, rep.OK(), "seed %d: %s", rng.seed, rep.String())
	require.Empty(t, mismatches, "seed %d: every repeat within the window is a duplicate, and only those", rng.seed)
	require.Empty(t, auditCancels(calls, cancels, producer.Sent), "seed %d: nothing stored before a cancel delivered after it", rng.seed)
	auditChaosCounters(t, nodes[0].node, calls, cancels, rng.seed)
	// rep.Lost covers the acknowledged payloads; here nothing handled
	// may come from nowhere: it was acknowledged to the producer or was
	// part of a batch whose answer the producer never got.
	known := map[string]bool{}
	for _, ps := range enqueued {
		for _, p := range ps {
			known[p] = true
		}
	}
	handled := map[string]bool{} // id + payload: acknowledged, discarded or in the morgue
	for _, c := range calls {
		for _, p := range c.Payloads {
			require.True(t, known[p.Data] || unsure[p.Data], "payload %s was handled but never enqueued", p.Data)
			if c.Acked || c.Outcome == history.Discarded {
				handled[c.ID+"\x00"+p.Data] = true
			}
		}
	}
	for id, ps := range morgue {
		for _, p := range ps {
			handled[id+"\x00"+p] = true
		}
	}
	require.GreaterOrEqual(t, len(handled), total, "every acknowledged payload was handled, discarded or is in the morgue")
	require.LessOrEqual(t, len(handled), total+len(unsure), "no more payloads handled than were sent: no repeat was stored")
}

// auditChaosCounters reads the queue's counters from node and checks them
// against the bounds the records set (counterBounds).
func auditChaosCounters(t *testing.T, node *nodetest.Node, calls []history.Call, cancels []cancelRecord, seed uint64) {
	t.Helper()
	code, body := node.Do(http.MethodGet, "/api/v1/queues/orders", nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var q apiv1.Queue
	require.NoError(t, json.Unmarshal(body, &q))
	b := boundsOf(calls, cancels)
	t.Logf("counters: snoozed %d in [%d, %d], discarded %d in [%d, %d], cancelled %d in [0, %d]",
		q.Snoozed, b.snoozedMin, b.snoozedMax, q.Discarded, b.discardedMin, b.discardedMax, q.Cancelled, b.cancelledMax)
	require.Empty(t, b.check(q), "seed %d: the counters agree with the records", seed)
	require.Positive(t, b.snoozedMax+b.discardedMax, "seed %d: outcomes were mixed in", seed)
}
