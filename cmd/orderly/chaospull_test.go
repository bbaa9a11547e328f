package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// pullChaosConfig is the pull queue of TestChaosPull: leases of 1s, ids
// that never run out of retries (so that only an answer sends payloads to
// the morgue: history.CheckPull's UnexplainedDead).
const pullChaosConfig = `
queues:
  - name: orders
    shards: 8
    batch_size: 4
    timeout: 3s
    max_retry_count: 1000
    retry: {policy: linear, base: 20ms}
    handler: {type: pull, lease: 1s, worker_token: w-orders}
`

// pullChaos is the cluster, the pull worker processes and the faults of
// TestChaosPull.
type pullChaos struct {
	t       *testing.T
	rnd     func(int) int
	note    func(string, ...any)
	srv     *redistest.Server
	nodes   []*chaosNode
	dir     string // the workers' records
	cfgs    []pullWorkerConfig
	workers []*pullWorkerProc
	// paused are the leases the workers held when they were SIGSTOPped
	// past those leases' deadlines: their answers must be refused.
	paused map[string]bool
	// killed are the record files of the workers SIGKILLed; nodeKills
	// when each node (base URL) was SIGKILLed: from the signal sent to the
	// process reaped.
	killed    map[string]bool
	nodeKills map[string][][2]time.Time
}

// TestChaosPull runs a pull queue on three node processes, served by three
// pull worker processes (each pulling from every node over raw HTTP, one
// of them also holding a slow lease per node that it extends, and
// recording every lease: pullworker_test.go) under a steady producer,
// while faults happen: a worker SIGKILLed and started again, a worker
// SIGSTOPped while it holds leases until a second past their deadlines
// (then SIGCONT: it answers late, every id dead with lateReason), a node
// SIGKILLed and restarted, a node stopped gracefully and restarted, a node
// cut off Redis past lease_ttl (its shards move: "lease lost"),
// redis-server SIGKILLed and restarted (AOF, appendfsync always). After the
// drain, the workers' own records are audited (history.CheckPull): no two
// accepted calls of an id overlap, no late answer is accepted, payloads in
// score order, nothing acknowledged to the producer lost, nothing in the
// morgue that an accepted answer sent in time did not answer dead (so a
// late dead answer committed nothing); every lease held at a SIGSTOP is
// refused, a paused worker's call overlapped the next holder's in wall
// time at least once (the case the fence is for), and every answer left
// without a response had its worker or its node SIGKILLed while it waited
// (unexplainedUnsure). ORDERLY_CHAOS_SEED reproduces a run;
// ORDERLY_CHAOS_ROUNDS runs the faults that many times (default 1, make
// soak-chaos).
func TestChaosPull(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	rounds := envRounds(t, "ORDERLY_CHAOS_ROUNDS", 1)
	rng := newChaosRand(t)
	tl := newTimeline(t)
	c := &pullChaos{t: t, rnd: rng.intN, note: tl.note, dir: t.TempDir(), paused: map[string]bool{},
		killed: map[string]bool{}, nodeKills: map[string][][2]time.Time{},
		srv: redistest.NewServer(t, redistest.Options{AOF: true})}
	proxies := make([]*redistest.Proxy, 3)
	opts, started := startTrio(t, "p", nodetest.Options{Config: pullChaosConfig, Args: []string{"--concurrency", "10"}}, func(i int, o *nodetest.Options) {
		proxies[i] = redistest.NewProxy(t, c.srv.Addr())
		o.Redis = "redis://" + proxies[i].Addr + "/0"
	})
	var urls []string
	for i, n := range started {
		c.nodes = append(c.nodes, &chaosNode{opts: opts[i], node: n, proxy: proxies[i]})
		urls = append(urls, n.HTTP)
	}
	for i := range 3 {
		cfg := pullWorkerConfig{Name: fmt.Sprintf("w%d", i+1), Nodes: urls, Queue: "orders", Token: "w-orders", MaxIDs: 8, Work: 60}
		if i == 0 {
			cfg.Slow = 2000 // one slow lease per node, extended: cut off Redis, its node loses it
		}
		c.cfgs = append(c.cfgs, cfg)
		c.workers = append(c.workers, startPullWorker(t, c.dir, cfg))
	}
	c.note("3 nodes and 3 pull workers ready")
	store := directStore(t, c.srv.Addr())
	producer := produceOrders(t, store)

	faults := []func(){c.killWorker, c.pauseWorker, c.killNode, c.restartRedis, c.cutNode, c.stopNode}
	time.Sleep(2 * time.Second)
	for range rounds {
		rng.shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
		for _, f := range faults {
			f()
			time.Sleep(time.Duration(1000+c.rnd(1000)) * time.Millisecond)
		}
	}
	producer.Stop()
	c.note("producer stopped")
	for _, n := range c.nodes {
		n.node.WaitReady()
	}
	require.Eventually(t, func() bool {
		st, err := store.Stats(context.Background(), "orders")
		return err == nil && st[0].Length == 0 && st[0].Busy == 0
	}, 60*time.Second, 50*time.Millisecond, "orders drains\ntimeline:\n%s", tl)
	for _, w := range c.workers {
		w.stop(t)
	}
	c.note("orders empty, workers stopped")
	c.audit(store, producer, rng.seed, tl)
}

// audit reads the workers' records and the morgue and checks them.
func (c *pullChaos) audit(store *redisstore.Store, producer *history.Producer, seed uint64, tl *timeline) {
	t := c.t
	calls, files := readPullRecords(t, c.dir)
	morgue, reasons := morgueReasons(t, store, "orders")
	enqueued, unsure := producer.Enqueued(), producer.Unsure()
	rep := history.CheckPull(calls, enqueued, morgue)
	t.Logf("seed %d: %d payloads acknowledged to the producer (%d batches refused), %d payloads of %d ids in the morgue; %d leases held at a SIGSTOP; %s\ntimeline:\n%s",
		seed, countPayloads(enqueued), producer.Refused(), countPayloads(morgue), len(morgue), len(c.paused), rep.String(), tl)
	require.True(t, rep.OK(), "seed %d: %s", seed, rep.String())
	for id, r := range reasons {
		require.NotContains(t, r, lateReason, "seed %d: id %s: a late answer reached the morgue", seed, id)
	}
	answered := 0
	for _, pc := range calls {
		for _, p := range pc.Payloads {
			require.True(t, slices.Contains(enqueued[pc.ID], p.Data) || unsure[p.Data], "payload %s was pulled but never enqueued", p.Data)
		}
		if !c.paused[pc.Lease] || pc.Sent.IsZero() {
			continue
		}
		answered++
		require.False(t, pc.Accepted(), "seed %d: id %s: lease %s, held past its deadline by a stopped worker, was accepted", seed, pc.ID, pc.Lease)
		require.Contains(t, []int{409, 0}, pc.Status, "seed %d: id %s: lease %s held past its deadline: refused", seed, pc.ID, pc.Lease)
	}
	require.Positive(t, answered, "seed %d: a worker answered a lease it held past its deadline", seed)
	require.Empty(t, c.unexplainedUnsure(calls, files), "seed %d: an answer without a response had its worker or its node killed", seed)
	require.Positive(t, rep.LateRefused, "seed %d: late answers were sent and refused", seed)
	require.Positive(t, rep.StaleOverlaps, "seed %d: a stale holder overlapped the next one in wall time", seed)
	require.Positive(t, rep.Dead, "seed %d: ids were answered dead", seed)
}

// unexplainedUnsure lists the answers sent that got no response (they may
// or may not have committed, so CheckPull counts them only against loss)
// without a kill to explain it: one whose request failed must have had its
// node SIGKILLed while it waited; one with no end recorded must be in the
// record of a worker SIGKILLed. An answer the node never returned (a call
// handed to two pulls, say) is one of neither.
func (c *pullChaos) unexplainedUnsure(calls []history.PullCall, files []string) []string {
	var bad []string
	for i, pc := range calls {
		if !pc.Unsure() {
			continue
		}
		explained := false
		if pc.Answered.IsZero() {
			explained = c.killed[files[i]]
		}
		for _, k := range c.nodeKills[pc.Node] {
			explained = explained || !pc.Answered.IsZero() && !k[0].After(pc.Answered) && !pc.Sent.After(k[1])
		}
		if !explained {
			bad = append(bad, fmt.Sprintf("id %q: lease %s of %s, answered by %s at %s: no response, no kill",
				pc.ID, pc.Lease, pc.Node, pc.Worker, pc.Sent.Format("15:04:05.000")))
		}
	}
	return bad
}

// killWorker SIGKILLs a worker and starts it again (a new record file).
func (c *pullChaos) killWorker() {
	i := c.rnd(len(c.workers))
	c.note("SIGKILL worker %s", c.cfgs[i].Name)
	c.workers[i].kill()
	c.killed[c.workers[i].out] = true
	time.Sleep(time.Duration(200+c.rnd(800)) * time.Millisecond)
	c.workers[i] = startPullWorker(c.t, c.dir, c.cfgs[i])
	c.note("worker %s restarted", c.cfgs[i].Name)
}

// pauseWorker SIGSTOPs a worker while it holds leases, until two seconds
// past their deadlines, then SIGCONTs it.
func (c *pullChaos) pauseWorker() {
	for range 50 {
		i := c.rnd(len(c.workers))
		w := c.workers[i]
		w.signal(syscall.SIGSTOP)
		waitStopped(c.t, w.cmd.Process.Pid)
		open := w.openLeases(c.t)
		if len(open) == 0 {
			w.signal(syscall.SIGCONT)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		last := time.Now()
		for id, d := range open {
			c.paused[id] = true
			if d.After(last) {
				last = d
			}
		}
		// Two seconds past the deadline: the ids' next holder has time to
		// take them while the stopped worker still holds them.
		c.note("SIGSTOP worker %s holding %d leases, for %s", c.cfgs[i].Name, len(open), time.Until(last.Add(2*time.Second)).Round(time.Millisecond))
		time.Sleep(time.Until(last.Add(2 * time.Second)))
		w.signal(syscall.SIGCONT)
		c.note("SIGCONT worker %s", c.cfgs[i].Name)
		return
	}
	c.note("SIGSTOP: no worker found holding a lease")
}

// killNode SIGKILLs a node and restarts it on the same addresses.
func (c *pullChaos) killNode() {
	n := c.nodes[c.rnd(len(c.nodes))]
	c.note("SIGKILL %s", n.opts.Name)
	from := time.Now()
	n.node.Kill()
	c.nodeKills[n.node.HTTP] = append(c.nodeKills[n.node.HTTP], [2]time.Time{from, time.Now()})
	time.Sleep(time.Duration(500+c.rnd(1500)) * time.Millisecond)
	n.node = nodetest.Start(c.t, n.opts)
	c.note("%s restarted", n.opts.Name)
}

// cutNode cuts one node off Redis for longer than lease_ttl: it loses its
// shards, whose calls end ("lease lost") while their workers hold them, and
// another node serves the ids.
func (c *pullChaos) cutNode() {
	n := c.nodes[c.rnd(len(c.nodes))]
	c.note("%s cut off Redis", n.opts.Name)
	n.proxy.Cut()
	time.Sleep(time.Duration(2000+c.rnd(2000)) * time.Millisecond)
	n.proxy.Restore(c.t)
	c.note("%s reaches Redis again", n.opts.Name)
}

// stopNode stops a node gracefully (SIGTERM: its broker stops first, held
// leases may be answered until its drain deadline) and starts it again.
func (c *pullChaos) stopNode() {
	n := c.nodes[c.rnd(len(c.nodes))]
	c.note("SIGTERM %s", n.opts.Name)
	n.node.Signal(syscall.SIGTERM)
	require.Equal(c.t, 0, n.node.Wait(30*time.Second), "graceful stop exits 0")
	n.node = nodetest.Start(c.t, n.opts)
	c.note("%s restarted", n.opts.Name)
}

// restartRedis SIGKILLs redis-server and starts it again (AOF).
func (c *pullChaos) restartRedis() {
	c.note("redis-server SIGKILL")
	c.srv.Kill(c.t)
	time.Sleep(time.Duration(200+c.rnd(800)) * time.Millisecond)
	c.srv.Start(c.t)
	c.note("redis-server restarted")
}

// waitStopped waits until every thread of the process pid is stopped
// (Linux: /proc), so that its record is read only once it can no longer
// write to it.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(stats) == 0 {
			return false
		}
		for _, s := range stats {
			b, err := os.ReadFile(s)
			if err != nil {
				return false
			}
			// pid (comm) state ...: the state follows the last ')'.
			rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
			if f := strings.Fields(rest); len(f) == 0 || (f[0] != "T" && f[0] != "t") {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "process %d stops", pid)
}

// morgueReasons is morgueOf that also returns each id's error.
func morgueReasons(t *testing.T, store persistence.Store, queue string) (map[string][]string, map[string]string) {
	t.Helper()
	page, err := store.ListMorgue(context.Background(), queue, persistence.ListOptions{Limit: 1000, Payloads: persistence.MaxLookupPayloads})
	require.NoError(t, err)
	payloads, reasons := map[string][]string{}, map[string]string{}
	for _, m := range page.Entries {
		require.Len(t, m.Payloads, m.PayloadCount, "the morgue entry of %s is read whole", m.ID)
		for _, p := range m.Payloads {
			payloads[m.ID] = append(payloads[m.ID], string(p.Data))
		}
		reasons[m.ID] = m.Error
	}
	return payloads, reasons
}
