package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// reshardPlan is the shard counts the chaos reshard tests move orders to,
// one reshard at a time, from the 4 shards it starts with: up, down, up.
var reshardPlan = []int{7, 3, 6}

// reshardSettle bounds how long a reshard may take once the faults of its
// round stopped: the lease of a node killed or frozen (1s) expires, its
// shards are taken over and drained in steps; far more than that is a
// stall.
const reshardSettle = 20 * time.Second

// TestChaosReshard reshards a queue up and down (4 -> 7 -> 3 -> 6, one
// reshard at a time; ORDERLY_RESHARD_ROUNDS repeats the plan, make soak)
// on three node processes sharing one redis-server (AOF, appendfsync
// always) while producers enqueue on every path (reshardChaos) and, during
// each reshard, a node is SIGKILLed and restarted, a node is frozen with
// SIGSTOP past lease_ttl and resumed, or redis-server is SIGKILLed and
// restarted. The receivers' records must show no overlap of one id's
// calls (across its old and new shard), its payloads in score order,
// nothing acknowledged lost, and every reshard ended within reshardSettle
// of the faults.
func TestChaosReshard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rc := &reshardChaos{t: t, url: "redis://" + srv.Addr() + "/0"}
	rc.restartRedis = func() {
		rc.note("redis-server SIGKILL")
		srv.Kill(t)
		time.Sleep(time.Duration(200+rc.rnd(800)) * time.Millisecond)
		srv.Start(t)
		rc.note("redis-server restarted")
	}
	rc.run()
}

// TestChaosReshardCluster is TestChaosReshard on a Redis Cluster of three
// masters with one replica each, in the replicated mode: its Redis fault
// SIGKILLs a master (its replica takes over, the old master comes back as
// its replica). Enqueue notices travel on sharded channels subscribed per
// shard, so the shards a reshard creates may be served at the nodes' idle
// poll (5s, not configurable in the binary) until the subscriptions follow.
func TestChaosReshardCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	if redisserver.Binary() == "" || redisserver.CLI() == "" {
		t.Skip("needs redis-server and redis-cli")
	}
	c, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: 3, Replicas: 1})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	rc := &reshardChaos{t: t, url: "redis+cluster://" + strings.Join(c.Addrs(), ","), replicated: true}
	rc.restartRedis = func() { killClusterMaster(t, c, rc.note, 0) }
	rc.run()
}

// actorTimeout bounds a round sent by actor message. It outlasts a frozen
// node (SIGSTOP, at most 3s) and a node's own bound on an enqueue while
// Redis is down, so that a round is not given up on while the node may
// still store it, after a later round, out of score order.
const actorTimeout = 20 * time.Second

// reshardChaos is one run of the chaos reshard tests.
type reshardChaos struct {
	t            *testing.T
	url          string // the nodes' and producers' Redis
	replicated   bool   // durability replicated (Cluster)
	restartRedis func() // the Redis fault

	rng   *chaosRand
	tl    *timeline
	store *redisstore.Store
	rcv   *webhooktest.Receiver
	mix   *mixer
	nodes []*chaosNode
	urls  []string // the nodes' APIs (fixed ports)
	addrs []string // the nodes' actor remotes (fixed ports)
	bin   string   // the orderly binary, for the enqueue command

	downMu sync.RWMutex // guards down; held by sendActor from its pick to its send
	down   int          // the node killed and not restarted yet (-1: none)

	faults   map[string]int // fault -> times injected
	order    []fault        // the faults, shuffled for each pass
	reshards []string       // what each reshard did, for the log
}

func (rc *reshardChaos) rnd(n int) int                   { return rc.rng.intN(n) }
func (rc *reshardChaos) note(format string, args ...any) { rc.tl.note(format, args...) }

// reshardConfig is orders (4 shards, ticked every second by a periodic
// job) and inbox, whose calls emit their payloads into orders.
func reshardConfig(url string) string {
	return ordersConfig(url, 4, "5s") + fmt.Sprintf(`  - name: inbox
    shards: 2
    batch_size: 4
    retry: {policy: linear, base: 20ms}
    handler: {type: http, url: %q, timeout: 5s}
periodic:
  - {name: tick, queue: orders, schedule: "@every 1s", id: tick, payload: {"tick": true}}
`, url)
}

// answer is the receivers' handler: inbox emits each payload it is given
// into orders (id "emit-<n>" for "order-<n>", payload and score kept);
// orders answers after up to 10ms, fails 1 id in 20 and mixes outcomes in.
func (rc *reshardChaos) answer(c *webhooktest.Call) webhooktest.Answer {
	if c.Request.Queue == "inbox" {
		a := webhooktest.Answer{Delay: time.Millisecond}
		for _, j := range c.Request.Jobs {
			for _, p := range j.Payloads {
				score := p.Score
				a.Emit = append(a.Emit, wire.Emit{From: j.ID, Queue: "orders", ID: renameID(j.ID, "emit"),
					Payload: json.RawMessage(renameID(string(p.Data), "emit")), Score: &score})
			}
		}
		return a
	}
	a := webhooktest.Answer{Delay: time.Duration(rc.rnd(10)) * time.Millisecond}
	failSome(&a, c, rc.rnd, 20)
	rc.mix.choose(&a, c)
	return a
}

// renameID replaces the producers' "order-" by prefix + "-", in an id or a
// payload: the producers of the other paths send the ids and payloads of
// history.Produce under their own names.
func renameID(s, prefix string) string { return strings.Replace(s, "order-", prefix+"-", 1) }

// renamed is a producer's record under prefix.
func renamed(m map[string][]string, prefix string) map[string][]string {
	out := make(map[string][]string, len(m))
	for id, ps := range m {
		for _, p := range ps {
			out[renameID(id, prefix)] = append(out[renameID(id, prefix)], renameID(p, prefix))
		}
	}
	return out
}

// run starts the nodes and the producers, reshards while faults happen,
// drains and audits.
func (rc *reshardChaos) run() {
	t := rc.t
	rc.rng = newChaosRand(t)
	rc.tl = newTimeline(t)
	rc.mix = newMixer()
	rc.faults = map[string]int{}
	rc.down = -1
	rc.order = rc.faultList()
	rc.rcv = nodetest.NewReceiver(t, rc.answer)
	var args []string
	scfg := &redisstore.Config{}
	if rc.replicated {
		args = []string{"--durability", "replicated"}
		scfg.Durability = redisstore.DurabilityReplicated
	}
	actorPort := func(i int, o *nodetest.Options) {
		port, err := redistest.FreePort()
		require.NoError(t, err)
		rc.addrs = append(rc.addrs, fmt.Sprintf("127.0.0.1:%d", port))
		o.Args = append(o.Args, "--actor-addr", rc.addrs[i])
	}
	opts, started := startTrio(t, "r", nodetest.Options{Redis: rc.url, Config: reshardConfig(rc.rcv.URL), Args: args}, actorPort)
	for i, n := range started {
		rc.nodes = append(rc.nodes, &chaosNode{opts: opts[i], node: n})
		rc.urls = append(rc.urls, fmt.Sprintf("http://127.0.0.1:%d", opts[i].HTTPPort))
	}
	rc.note("3 nodes ready on %s", redisurl.Redact(rc.url))
	u, err := redisurl.Parse(rc.url)
	require.NoError(t, err)
	rdb := u.NewClient()
	t.Cleanup(func() { rdb.Close() })
	rc.store, err = redisstore.New(rdb, scfg)
	require.NoError(t, err)

	prods := rc.produce()
	time.Sleep(2 * time.Second)
	rounds := envRounds(t, "ORDERLY_RESHARD_ROUNDS", 1)
	start := time.Now()
	for r := range rounds {
		for i, shards := range reshardPlan {
			rc.reshard(shards, r*len(reshardPlan)+i)
		}
	}
	took := time.Since(start)
	for _, p := range prods {
		p.p.Stop()
	}
	rc.note("producers stopped")
	rc.audit(prods, took)
}

// producer is one path's producer and the prefix its ids are recorded under.
type producer struct {
	p      *history.Producer
	prefix string
}

// produce starts a producer on each path: the Go client over the store
// (order-*), HTTP enqueues to a random node (http-*), the orderly enqueue
// command (cli-*), Enqueue actor messages to a random node's enqueue actor
// over protoactor remote (actor-*), and the store into inbox, whose calls
// emit into orders (emit-*, last). The periodic job ticks on its own.
func (rc *reshardChaos) produce() []producer {
	t := rc.t
	rc.bin = nodetest.Binary(t)
	goP := produceOrders(t, rc.store)
	httpP := history.Produce(10, 25*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		return rc.sendHTTP(jobsBody(jobs, "http", false))
	})
	t.Cleanup(httpP.Stop)
	cliP := history.Produce(4, 300*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		return rc.sendCLI(jobsBody(jobs, "cli", true))
	})
	t.Cleanup(cliP.Stop)
	actorP := history.Produce(10, 30*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		return rc.sendActor(jobs)
	})
	t.Cleanup(actorP.Stop)
	inboxP := history.Produce(8, 40*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return rc.store.Enqueue(ctx, "inbox", jobs)
	})
	t.Cleanup(inboxP.Stop)
	return []producer{{goP, "order"}, {httpP, "http"}, {cliP, "cli"}, {actorP, "actor"}, {inboxP, "emit"}}
}

// jobsBody is jobs, renamed under prefix, as a JSON array (lines of JSON
// objects when lines is set).
func jobsBody(jobs []persistence.NewJob, prefix string, lines bool) []byte {
	var b bytes.Buffer
	objs := make([]json.RawMessage, len(jobs))
	for i, j := range jobs {
		o, _ := json.Marshal(map[string]any{"id": renameID(j.ID, prefix),
			"payload": json.RawMessage(renameID(string(j.Payload), prefix)), "score": *j.Score})
		objs[i] = o
		b.Write(o)
		b.WriteByte('\n')
	}
	if lines {
		return b.Bytes()
	}
	arr, _ := json.Marshal(objs)
	return arr
}

// sendHTTP posts a round to a random node, then the others in turn while
// they refuse the connection. Any other failure may have stored the round
// (a lost answer; a 503 for a write the master applied but too few
// replicas acknowledged, persistence.ErrNotReplicated), so the round is not
// sent again, which could deliver its payloads twice: it counts as unsure.
func (rc *reshardChaos) sendHTTP(body []byte) error {
	client := &http.Client{Timeout: 3 * time.Second}
	first := rc.rnd(len(rc.urls))
	for k := range rc.urls {
		url := rc.urls[(first+k)%len(rc.urls)] + "/api/v1/queues/orders/jobs"
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				return nil
			}
			return fmt.Errorf("answered %d, the round may have landed", resp.StatusCode)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("answer lost, the round may have landed: %w", err)
		}
	}
	return errors.New("no node took the round")
}

// sendCLI enqueues a round with orderly enqueue --file - through a random
// node; a failed command may have stored the round (unsure).
func (rc *reshardChaos) sendCLI(lines []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, rc.bin, "enqueue", "--queue", "orders", "--file", "-")
	cmd.Env = append(os.Environ(), "ORDERLY_HTTP="+rc.urls[rc.rnd(len(rc.urls))])
	cmd.Stdin = bytes.NewReader(lines)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("orderly enqueue: %w: %s", err, out)
	}
	return nil
}

// sendActor enqueues a round, renamed under "actor", with an Enqueue
// message to the enqueue actor of a random node (docs/contract.md §6.2),
// waiting at most actorTimeout for its EnqueueResult. Any failure may have
// stored the round (unsure). It sends nothing to a killed node until it is
// restarted: protoactor's remote would try to connect to it (5 times, 2s
// apart) and leak the client connection of each failed attempt.
func (rc *reshardChaos) sendActor(jobs []persistence.NewJob) error {
	msg := &messages.Enqueue{Queue: "orders", Jobs: make([]*messages.Job, len(jobs))}
	for i, j := range jobs {
		score := *j.Score
		msg.Jobs[i] = &messages.Job{Id: renameID(j.ID, "actor"), Payload: []byte(renameID(string(j.Payload), "actor")), Score: &score}
	}
	rc.downMu.RLock()
	var live []string
	for i, a := range rc.addrs {
		if i != rc.down {
			live = append(live, a)
		}
	}
	addr := live[rc.rnd(len(live))]
	f := actorClient().Root.RequestFuture(actor.NewPID(addr, "enqueue"), msg, actorTimeout)
	rc.downMu.RUnlock()
	res, err := f.Result()
	if err != nil {
		return fmt.Errorf("enqueue actor at %s: %w", addr, err)
	}
	r, ok := res.(*messages.EnqueueResult)
	switch {
	case !ok:
		return fmt.Errorf("enqueue actor at %s answered %T", addr, res)
	case r.GetError() != nil:
		return fmt.Errorf("enqueue actor at %s: %s: %s", addr, r.GetError().GetCode(), r.GetError().GetMessage())
	case r.GetEnqueued() != int64(len(jobs)):
		return fmt.Errorf("enqueue actor at %s enqueued %d of %d", addr, r.GetEnqueued(), len(jobs))
	}
	return nil
}

// setDown records the node killed (-1: none any more) for sendActor.
func (rc *reshardChaos) setDown(i int) {
	rc.downMu.Lock()
	rc.down = i
	rc.downMu.Unlock()
}

// fault is one fault a reshard runs into.
type fault struct {
	name string
	do   func()
}

// faultList is the faults, one per reshard in turn: SIGKILL and restart of
// a node, SIGSTOP of a node past lease_ttl (1s) then SIGCONT, and the
// Redis fault.
func (rc *reshardChaos) faultList() []fault {
	return []fault{
		{"node SIGKILL", func() {
			i := rc.rnd(len(rc.nodes))
			n := rc.nodes[i]
			rc.note("SIGKILL %s", n.opts.Name)
			rc.setDown(i)
			n.node.Kill()
			time.Sleep(time.Duration(500+rc.rnd(1500)) * time.Millisecond)
			n.node = nodetest.Start(rc.t, n.opts) // healthy: its actor remote listens
			rc.setDown(-1)
			rc.note("%s restarted", n.opts.Name)
		}},
		{"node SIGSTOP", func() {
			n := rc.nodes[rc.rnd(len(rc.nodes))]
			pause := time.Duration(1500+rc.rnd(1500)) * time.Millisecond
			rc.note("SIGSTOP %s for %v", n.opts.Name, pause)
			n.node.Signal(syscall.SIGSTOP)
			time.Sleep(pause)
			n.node.Signal(syscall.SIGCONT)
			rc.note("SIGCONT %s", n.opts.Name)
		}},
		{"Redis restart", rc.restartRedis},
	}
}

// reshard moves orders to shards shards while the i-th fault of the
// (seeded) list happens: the reshard starts up to 1s into the fault,
// retried while Redis does not answer. It then waits for the reshard to
// end, and fails if it did not within reshardSettle of the fault's end.
func (rc *reshardChaos) reshard(shards, i int) {
	t := rc.t
	if i%len(rc.order) == 0 { // every fault once in each pass, in a seeded order
		rc.rng.shuffle(len(rc.order), func(a, b int) { rc.order[a], rc.order[b] = rc.order[b], rc.order[a] })
	}
	f := rc.order[i%len(rc.order)]
	started := make(chan persistence.QueueShape, 1)
	delay := time.Duration(rc.rnd(1000)) * time.Millisecond
	go func() {
		time.Sleep(delay)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			sh, err := rc.store.Reshard(ctx, "orders", shards)
			cancel()
			if err == nil {
				started <- sh
				return
			}
			rc.note("reshard to %d: %v (retried)", shards, err)
			time.Sleep(200 * time.Millisecond)
		}
	}()
	begin := time.Now()
	rc.faults[f.name]++
	f.do()
	faultEnd := time.Now()
	var sh persistence.QueueShape
	select {
	case sh = <-started:
	case <-time.After(reshardSettle):
		require.FailNow(t, "the reshard did not start", "to %d shards\ntimeline:\n%s", shards, rc.tl)
	}
	rc.note("reshard to %d shards started (%s), fault %q over", shards, sh, f.name)
	var st persistence.ReshardStatus
	ended := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := rc.store.ReshardStatus(ctx, "orders")
		if err == nil {
			st = s
		}
		return err == nil && !s.Shape.Resharding()
	}
	for !ended() {
		if time.Since(faultEnd) > reshardSettle && time.Since(begin) > reshardSettle {
			require.FailNow(t, "reshard stalled", "to %d shards: %s; %d ids moved, %d left, %d shards drained after %v (faults over %v ago)\ntimeline:\n%s",
				shards, st.Shape, st.Moved, st.Left, st.Drained, time.Since(begin).Round(time.Millisecond), time.Since(faultEnd).Round(time.Millisecond), rc.tl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, shards, st.Shape.Current.Count, "the reshard ended on the count asked for")
	line := fmt.Sprintf("%d shards (%s) with %s: ended %v after it began, %v after the fault", shards, st.Shape, f.name,
		time.Since(begin).Round(time.Millisecond), time.Since(faultEnd).Round(time.Millisecond))
	rc.reshards = append(rc.reshards, line)
	rc.note("reshard to %s", line)
	time.Sleep(time.Duration(500+rc.rnd(1000)) * time.Millisecond)
}

// pathReports checks the calls of orders by producer path (its ids'
// prefix), each against what that path's producer had acknowledged, and
// returns each path's report, and a line for each to log.
func pathReports(orders []history.Call, paths []producer, enqueued, morgue map[string][]string) ([]string, map[string]history.Report) {
	of := func(prefix string, m map[string][]string) map[string][]string {
		out := map[string][]string{}
		for id, ps := range m {
			if strings.HasPrefix(id, prefix+"-") {
				out[id] = ps
			}
		}
		return out
	}
	var lines []string
	reps := map[string]history.Report{}
	for _, p := range paths {
		var calls []history.Call
		for _, c := range orders {
			if strings.HasPrefix(c.ID, p.prefix+"-") {
				calls = append(calls, c)
			}
		}
		r := history.Check(calls, of(p.prefix, enqueued), of(p.prefix, morgue))
		reps[p.prefix] = r
		lines = append(lines, fmt.Sprintf("%s: %d payloads acknowledged to it (%d unsure); %s",
			p.prefix, countPayloads(of(p.prefix, enqueued)), len(p.p.Unsure()), r.String()))
	}
	return lines, reps
}

// audit drains inbox and orders once every node is ready and checks the
// receivers' records: for orders, every path's acknowledged payloads and
// the payloads inbox acknowledged (its emits) are processed or in the
// morgue, no id's calls overlap and each id's payloads came in score
// order; the periodic job's calls never overlap either.
func (rc *reshardChaos) audit(prods []producer, took time.Duration) {
	t := rc.t
	for _, n := range rc.nodes {
		n.node.WaitReady()
	}
	waitDrained(t, rc.store, rc.rcv, "inbox", 60*time.Second, rc.tl)
	paths, inboxP := prods[:len(prods)-1], prods[len(prods)-1].p // the producers into orders; into inbox
	enqueued, unsure := map[string][]string{}, 0
	for _, p := range paths {
		for id, ps := range renamed(p.p.Enqueued(), p.prefix) {
			enqueued[id] = ps
		}
		unsure += len(p.p.Unsure())
	}
	emitted := map[string][]string{} // what inbox acknowledged, emitted into orders
	var inbox, orders, ticks []history.Call
	var rep history.Report
	split := func() {
		var in, out []webhooktest.Call
		for _, c := range rc.rcv.Calls() {
			if c.Request.Queue == "inbox" {
				in = append(in, c)
			} else {
				out = append(out, c)
			}
		}
		inbox, orders, ticks = history.FromWebhook(in), nil, nil
		for _, c := range history.FromWebhook(out) {
			if c.ID == "tick" {
				ticks = append(ticks, c)
			} else {
				orders = append(orders, c)
			}
		}
		clear(emitted)
		seen := map[string]bool{}
		for _, c := range inbox {
			for _, p := range c.Payloads {
				if k := c.ID + " " + p.Data; c.Acked && !seen[k] {
					seen[k] = true
					emitted[renameID(c.ID, "emit")] = append(emitted[renameID(c.ID, "emit")], renameID(p.Data, "emit"))
				}
			}
		}
		all := map[string][]string{}
		for id, ps := range enqueued {
			all[id] = ps
		}
		for id, ps := range emitted {
			all[id] = ps
		}
		rep = history.Check(orders, all, morgueOf(t, rc.store, "orders"))
	}
	// The last emits are relayed after inbox drained.
	require.Eventually(t, func() bool { split(); return len(rep.Lost) == 0 }, 60*time.Second, 200*time.Millisecond,
		"every acknowledged payload and emit reaches orders: %s\ntimeline:\n%s", &rep, rc.tl)
	waitDrained(t, rc.store, rc.rcv, "orders", 60*time.Second, rc.tl)
	split()
	inRep := history.Check(inbox, inboxP.Enqueued(), nil)
	tickRep := history.Check(ticks, nil, nil)
	total := countPayloads(enqueued) + countPayloads(emitted)
	byPath, pathReps := pathReports(orders, paths, enqueued, morgueOf(t, rc.store, "orders"))
	t.Logf("seed %d: %d reshards in %v (4 -> %v), faults %v; %d payloads of %d ids acknowledged to the producers (%d unsure), %d emitted by inbox; orders: %s\nby path:\n  %s\ninbox: %s\nticks: %s\nreshards:\n  %s\ntimeline:\n%s",
		rc.rng.seed, len(rc.reshards), took.Round(time.Millisecond), reshardPlan, rc.faults, countPayloads(enqueued), len(enqueued), unsure,
		countPayloads(emitted), rep.String(), strings.Join(byPath, "\n  "), inRep.String(), tickRep.String(), strings.Join(rc.reshards, "\n  "), rc.tl)
	require.Positive(t, total)
	require.True(t, rep.OK(), "seed %d: orders: %s", rc.rng.seed, rep.String())
	for _, p := range paths {
		require.Positive(t, pathReps[p.prefix].Acked, "seed %d: payloads of path %s acknowledged and processed", rc.rng.seed, p.prefix)
	}
	require.True(t, inRep.OK(), "seed %d: inbox: %s", rc.rng.seed, inRep.String())
	require.Empty(t, tickRep.Overlaps, "seed %d: the periodic job's calls never overlap", rc.rng.seed)
	require.Positive(t, len(ticks), "the periodic job ticked")
	for _, name := range []string{"node SIGKILL", "node SIGSTOP", "Redis restart"} {
		require.Positive(t, rc.faults[name], "fault %s injected", name)
	}
}
