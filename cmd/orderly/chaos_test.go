package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// chaosNode is one node of the chaos test and how to start it again.
type chaosNode struct {
	opts  nodetest.Options
	node  *nodetest.Node
	proxy *redistest.Proxy // between the node and Redis
}

// TestChaos runs three node processes under continuous load while faults
// happen: SIGKILL and restart of a node (twice), a graceful restart, a
// redis-server restart (AOF, appendfsync always), a Redis outage (every
// node's connections cut through a proxy), and a gossip partition of one
// node. Handlers fail and stall at random. At the end the recorded history
// must show that nothing acknowledged to the producer was lost, that no two
// handler calls of one id overlapped, and that each id's payloads arrived in
// score order. ORDERLY_CHAOS_SEED reproduces a run; ORDERLY_CHAOS_ROUNDS
// runs the whole list of faults that many times (default 1, make soak).
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	rounds := envRounds(t, "ORDERLY_CHAOS_ROUNDS", 1)
	rng := newChaosRand(t)
	rnd := rng.intN

	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Delay: time.Duration(rnd(10)) * time.Millisecond}
		if rnd(50) == 0 {
			a.Delay = 300 * time.Millisecond // a slow handler
		}
		failSome(&a, c, rnd, 20)
		return a
	})
	cfg := ordersConfig(rcv.URL, 8, "5s")

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
	producer := produceOrders(t, store)

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
	producer.Stop()
	note("producer stopped")

	// Drain: every node ready, the queue empty, nothing in flight.
	for _, n := range nodes {
		n.node.WaitReady()
	}
	waitDrained(t, store, rcv, "orders", 60*time.Second, tl)

	morgue := morgueOf(t, store, "orders")
	enqueued, unsure := producer.Enqueued(), producer.Unsure()
	total := countPayloads(enqueued)
	rep := history.Check(history.FromWebhook(rcv.Calls()), enqueued, morgue)
	t.Logf("seed %d: %d payloads acknowledged to the producer (%d batches refused during outages), %d in the morgue; %s\ntimeline:\n%s",
		rng.seed, total, producer.Refused(), len(morgue), rep.String(), tl)
	require.True(t, rep.OK(), "seed %d: %s", rng.seed, rep.String())
	// rep.Lost covers the acknowledged payloads; here nothing handled
	// may come from nowhere: it was acknowledged to the producer or was
	// part of a batch whose answer the producer never got.
	known := map[string]bool{}
	for _, ps := range enqueued {
		for _, p := range ps {
			known[p] = true
		}
	}
	for _, c := range history.FromWebhook(rcv.Calls()) {
		for _, p := range c.Payloads {
			require.True(t, known[p.Data] || unsure[p.Data], "payload %s was handled but never enqueued", p.Data)
		}
	}
	handled := rep.Acked + countPayloads(morgue)
	require.GreaterOrEqual(t, handled, total, "every acknowledged payload was handled or is in the morgue")
	require.LessOrEqual(t, handled, total+len(unsure), "no more payloads handled than were sent")
}
