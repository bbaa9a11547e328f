package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
)

const queue = "bench"

type runner struct {
	cfg        Config
	redisURL   string
	redis      *redisurl.URL
	durability string // the stores' durability mode
}

// runOn runs a scenario on its own Redis topology, if it names one, else
// on the runner's Redis.
func (r *runner) runOn(ctx context.Context, sc scenario) (Result, error) {
	if sc.topology == "" {
		return r.run(ctx, sc)
	}
	var url string
	switch sc.topology {
	case "cluster1", "cluster3":
		masters := 1
		if sc.topology == "cluster3" {
			masters = 3
		}
		r.progress(fmt.Sprintf("%s: starting a Redis Cluster of %d masters", sc.name, masters))
		c, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: masters})
		if err != nil {
			return Result{}, err
		}
		defer c.Close()
		url = "redis+cluster://" + strings.Join(c.Addrs(), ",")
	case "replica":
		master, err := redisserver.Start(redisserver.Options{})
		if err != nil {
			return Result{}, err
		}
		defer master.Close()
		replica, err := redisserver.Start(redisserver.Options{Args: []string{"--replicaof", "127.0.0.1", strings.TrimPrefix(master.Addr(), "127.0.0.1:")}})
		if err != nil {
			return Result{}, err
		}
		defer replica.Close()
		if err := waitReplica(ctx, master.Addr()); err != nil {
			return Result{}, err
		}
		url = master.URL()
	default:
		return Result{}, fmt.Errorf("unknown topology %q", sc.topology)
	}
	u, err := redisurl.Parse(url)
	if err != nil {
		return Result{}, err
	}
	sub := &runner{cfg: r.cfg, redisURL: url, redis: u, durability: sc.durability}
	return sub.run(ctx, sc)
}

// waitReplica waits until the master at addr has an online replica.
func waitReplica(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "state=online") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no replica online after 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newClient returns a client of the bench's Redis with at least poolSize
// connections (per server).
func (r *runner) newClient(poolSize int) redis.UniversalClient {
	u := *r.redis
	switch {
	case u.Options != nil:
		o := *u.Options
		o.PoolSize = max(o.PoolSize, poolSize)
		u.Options = &o
	case u.ClusterOptions != nil:
		o := *u.ClusterOptions
		o.PoolSize = max(o.PoolSize, poolSize)
		u.ClusterOptions = &o
	case u.FailoverOptions != nil:
		o := *u.FailoverOptions
		o.PoolSize = max(o.PoolSize, poolSize)
		u.FailoverOptions = &o
	}
	return u.NewClient()
}

func (r *runner) run(ctx context.Context, sc scenario) (Result, error) {
	res := Result{Scenario: sc.name, Description: sc.desc, Nodes: sc.nodes, Shards: sc.shards, BatchSize: sc.batch, Concurrency: sc.concurrency,
		Prefetch: max(sc.prefetch, sc.batch, orderly.DefaultPrefetch)}
	if sc.prefetch > 0 {
		res.Prefetch = sc.prefetch
	}
	var err error
	switch sc.kind {
	case "latency":
		err = r.latency(ctx, sc, &res)
	case "failover":
		err = r.failover(ctx, sc, &res)
	case "idle":
		err = r.idle(ctx, sc, &res)
	default:
		err = r.throughput(ctx, sc, &res)
	}
	r.progress("")
	return res, err
}

// admin returns a client and a store on a fresh key prefix.
func (r *runner) admin(sc scenario) (redis.UniversalClient, *redisstore.Store, string, error) {
	prefix := fmt.Sprintf("bench-%s-%d", sc.name, time.Now().UnixNano())
	c := r.newClient(0)
	s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Durability: r.durability})
	if err != nil {
		c.Close()
		return nil, nil, "", err
	}
	return c, s, prefix, nil
}

// recorder counts and records what the handlers of a run got.
type recorder struct {
	rec   history.Recorder
	acked atomic.Int64 // payloads acknowledged
}

func (rc *recorder) handler(node string) orderly.HandlerFunc {
	return func(ctx context.Context, b *orderly.Batch) error {
		start := time.Now()
		n := 0
		calls := make([]history.Call, len(b.Jobs))
		for i, j := range b.Jobs {
			calls[i] = history.Call{ID: j.ID, Node: node, Delivery: b.Delivery, Start: start, Acked: true,
				Payloads: make([]history.Payload, len(j.Payloads))}
			for k, p := range j.Payloads {
				calls[i].Payloads[k] = history.Payload{Data: string(p.Data), Score: p.Score}
			}
			n += len(j.Payloads)
		}
		end := time.Now()
		for _, c := range calls {
			c.End = end
			rc.rec.Add(c)
		}
		rc.acked.Add(int64(n))
		return nil
	}
}

// startNodes starts the in-process nodes of a scenario.
func (r *runner) startNodes(ctx context.Context, sc scenario, prefix string, handler func(string) orderly.HandlerFunc) ([]*orderly.Node, []*redisstore.Store, func(), error) {
	var nodes []*orderly.Node
	var stores []*redisstore.Store
	var clients []redis.UniversalClient
	stop := func() {
		for _, n := range nodes {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			n.Stop(sctx)
			cancel()
		}
		for _, c := range clients {
			c.Close()
		}
	}
	var seed string
	for i := range sc.nodes {
		c := r.newClient(4 * sc.concurrency)
		clients = append(clients, c)
		s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Durability: r.durability})
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		name := fmt.Sprintf("bench-%d", i+1)
		cfg := &orderly.Config{
			Name: name, Logger: r.cfg.Logger, Concurrency: sc.concurrency,
			Workers: []orderly.Worker{{Queue: queue, Shards: sc.shards, BatchSize: sc.batch, Prefetch: sc.prefetch, ConcurrentCalls: sc.concurrentCalls(), Handler: handler(name)}},
		}
		for q := 1; q < sc.queues; q++ {
			cfg.Workers = append(cfg.Workers, orderly.Worker{Queue: queueName(q), Shards: sc.shards, BatchSize: sc.batch, Prefetch: sc.prefetch, ConcurrentCalls: sc.concurrentCalls(), Handler: handler(name)})
		}
		if sc.nodes > 1 {
			port, err := redisserver.FreePort()
			if err != nil {
				stop()
				return nil, nil, nil, err
			}
			bind := "127.0.0.1:" + strconv.Itoa(port)
			cfg.Cluster = &orderly.ClusterConfig{Bind: bind}
			if seed != "" {
				cfg.Cluster.Join = []string{seed}
			}
			if seed == "" {
				seed = bind
			}
		}
		n, err := orderly.NewNode(s, cfg)
		if err == nil {
			err = n.Start(ctx)
		}
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		nodes = append(nodes, n)
		stores = append(stores, s)
	}
	return nodes, stores, stop, nil
}

// throughput enqueues the scenario's jobs through the Go client, then
// starts its nodes and measures how they drain the queue: time, CPU,
// memory and Redis usage per job, and an audit of what the handlers saw.
func (r *runner) throughput(ctx context.Context, sc scenario, res *Result) error {
	c, admin, prefix, err := r.admin(sc)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := admin.RegisterQueue(ctx, persistence.QueueSpec{Name: queue, Shards: sc.shards}); err != nil {
		return err
	}
	n := int(float64(r.cfg.Jobs) * sc.jobs)
	ids := max(n/max(sc.perID, 1), 1)
	res.Jobs, res.IDs = n, ids
	jobs, enqueued := throughputJobs(sc, n, ids)
	if err := r.enqueueAll(ctx, sc, admin, jobs, res); err != nil {
		return err
	}
	jobs = nil

	rc := &recorder{}
	handler := rc.handler
	if sc.webhook {
		rv, err := startReceiver(rc)
		if err != nil {
			return err
		}
		defer rv.close()
		handler = rv.handler
	}
	if sc.pull {
		pl, err := startPuller(rc, admin, sc.batch, max(sc.pullMax, sc.batch), cmp.Or(sc.pullLoops, sc.concurrency))
		if err != nil {
			return err
		}
		defer pl.close()
		handler = pl.handler
	}
	if err := r.drain(ctx, sc, c, admin, prefix, handler, rc, n, res); err != nil {
		return err
	}
	calls := rc.rec.Calls()
	res.Calls = countCalls(calls)
	res.Audit = audit(calls, enqueued, false)
	return cleanup(ctx, c, prefix)
}

// throughputJobs returns the n jobs of a throughput scenario over ids ids,
// with rising scores per id (and a delay within sc.delay when it is set),
// and the payloads enqueued to each id, in order, for the audit.
func throughputJobs(sc scenario, n, ids int) ([]client.Job, map[string][]string) {
	perID := max(sc.perID, 1)
	payload := make([]byte, sc.payload)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	jobs := make([]client.Job, n)
	enqueued := make(map[string][]string, ids)
	now := time.Now()
	for i := range jobs {
		id := "job-" + strconv.Itoa(i%ids)
		k := i / ids
		data := payload
		if perID > 1 {
			data = []byte(fmt.Sprintf("%s/%05d", id, k))
		}
		score := float64(k)
		jobs[i] = client.Job{ID: id, Payload: data, Score: &score}
		if sc.delay > 0 {
			jobs[i].PerformAt = now.Add(rand.N(sc.delay))
		}
		enqueued[id] = append(enqueued[id], string(data))
	}
	return jobs, enqueued
}

// enqueueAll enqueues jobs as producers do, through the Go client's batch
// API (one call, with the run's durability), and records its rate in res.
func (r *runner) enqueueAll(ctx context.Context, sc scenario, admin *redisstore.Store, jobs []client.Job, res *Result) error {
	producer, err := client.NewFromStore(admin, &client.Config{Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	r.progress(fmt.Sprintf("%s: enqueueing %d jobs", sc.name, len(jobs)))
	t0 := time.Now()
	if err := producer.Enqueue(ctx, queue, jobs...); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	res.EnqueueSec = time.Since(t0).Seconds()
	res.EnqueuePerSec = float64(len(jobs)) / res.EnqueueSec
	return nil
}

// redisMark is what Redis reported at one instant: its usage, and each
// master's CPU seconds.
type redisMark struct {
	usage   redisserver.Usage
	masters map[string]float64
}

// readRedisMark reads Redis's usage and its masters' CPU now.
func readRedisMark(ctx context.Context, c redis.UniversalClient) (redisMark, error) {
	u, err := redisserver.ReadUsage(ctx, c)
	if err != nil {
		return redisMark{}, err
	}
	m, err := masterCPU(ctx, c)
	if err != nil {
		return redisMark{}, err
	}
	return redisMark{usage: u, masters: m}, nil
}

// drain starts the scenario's nodes on the filled queue, waits until they
// processed its n jobs and the queue is empty, stops them, and records
// the drain's time, CPU, peak memory and Redis usage in res.
func (r *runner) drain(ctx context.Context, sc scenario, c redis.UniversalClient, admin *redisstore.Store, prefix string,
	handler func(string) orderly.HandlerFunc, rc *recorder, n int, res *Result) error {
	before, err := readRedisMark(ctx, c)
	if err != nil {
		return err
	}
	resetPeakRSS()
	cpu0 := cpuSeconds()
	t1 := time.Now()
	_, stores, stop, err := r.startNodes(ctx, sc, prefix, handler)
	if err != nil {
		return err
	}
	defer stop()
	rt0 := roundTrips(stores)
	for rc.acked.Load() < int64(n) {
		if time.Since(t1) > 10*time.Minute {
			return fmt.Errorf("only %d of %d jobs processed after 10 minutes", rc.acked.Load(), n)
		}
		r.progress(fmt.Sprintf("%s: %d/%d processed (%.0f jobs/s)", sc.name, rc.acked.Load(), n, float64(rc.acked.Load())/time.Since(t1).Seconds()))
		time.Sleep(5 * time.Millisecond)
	}
	// The last acknowledgements are in flight: wait for an empty queue.
	if err := waitEmpty(ctx, admin); err != nil {
		return err
	}
	res.WallSec = time.Since(t1).Seconds()
	res.ProcessPerSec = float64(n) / res.WallSec
	res.CPUSec = cpuSeconds() - cpu0
	res.PeakRSSMB = peakRSSMB()
	rt := roundTrips(stores) - rt0
	after, err := readRedisMark(ctx, c)
	if err != nil {
		return err
	}
	for addr, cpu := range after.masters {
		if res.RedisCPUByMaster == nil {
			res.RedisCPUByMaster = make(map[string]float64, len(after.masters))
		}
		res.RedisCPUByMaster[addr] = cpu - before.masters[addr]
	}
	used := after.usage.Sub(before.usage)
	res.RoundTripsPerJob = float64(rt) / float64(n)
	res.RedisCmdsPerJob = float64(used.Commands) / float64(n)
	res.RedisCPUSec = used.CPUSeconds
	res.CPUPerJobMicros = (res.CPUSec + res.RedisCPUSec) / float64(n) * 1e6
	return nil
}

func (r *runner) latency(ctx context.Context, sc scenario, res *Result) error {
	c, admin, prefix, err := r.admin(sc)
	if err != nil {
		return err
	}
	defer c.Close()
	const rounds = 500
	got := make(chan time.Time, 1)
	rc := &recorder{}
	handler := func(name string) orderly.HandlerFunc {
		record := rc.handler(name)
		return func(ctx context.Context, b *orderly.Batch) error {
			err := record(ctx, b)
			got <- time.Now()
			return err
		}
	}
	nodes, _, stop, err := r.startNodes(ctx, sc, prefix, handler)
	if err != nil {
		return err
	}
	defer stop()
	for !ready(ctx, nodes) {
		time.Sleep(10 * time.Millisecond)
	}
	enqueued := map[string][]string{}
	lat := make([]time.Duration, 0, rounds)
	for i := range rounds {
		time.Sleep(2 * time.Millisecond) // the node goes idle
		id := "lat-" + strconv.Itoa(i)
		if err := admin.Enqueue(ctx, queue, []persistence.NewJob{{ID: id}}); err != nil {
			return err
		}
		sent := time.Now()
		enqueued[id] = []string{""}
		select {
		case at := <-got:
			lat = append(lat, at.Sub(sent))
		case <-time.After(10 * time.Second):
			return fmt.Errorf("job %s not handled within 10s", id)
		}
		r.progress(fmt.Sprintf("%s: %d/%d", sc.name, i+1, rounds))
	}
	slices.Sort(lat)
	res.Jobs, res.IDs = rounds, rounds
	res.LatencyP50Ms = float64(lat[len(lat)/2].Microseconds()) / 1000
	res.LatencyP99Ms = float64(lat[len(lat)*99/100].Microseconds()) / 1000
	if err := waitEmpty(ctx, admin); err != nil {
		return err
	}
	res.Audit = audit(rc.rec.Calls(), enqueued, false)
	return cleanup(ctx, c, prefix)
}

func ready(ctx context.Context, nodes []*orderly.Node) bool {
	for _, n := range nodes {
		if n.Ready(ctx) != nil {
			return false
		}
	}
	return true
}

// waitEmpty waits until nothing is queued or in flight.
func waitEmpty(ctx context.Context, s persistence.Store) error {
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := s.Stats(ctx, queue)
		if err != nil {
			return err
		}
		if st[0].Length == 0 && st[0].Busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue not empty after a minute: %d queued, %d in flight", st[0].Length, st[0].Busy)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cleanup deletes the run's keys (on every master of a Cluster).
func cleanup(ctx context.Context, c redis.UniversalClient, prefix string) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return cleanupOne(ctx, m, prefix, true)
		})
	}
	return cleanupOne(ctx, c, prefix, false)
}

// cleanupOne deletes the run's keys of one server; on a Cluster master the
// keys are deleted one by one (pipelined), since they span slots.
func cleanupOne(ctx context.Context, c redis.Cmdable, prefix string, oneByOne bool) error {
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			if err := unlink(ctx, c, keys, oneByOne); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		if err := unlink(ctx, c, keys, oneByOne); err != nil {
			return err
		}
	}
	return iter.Err()
}

func unlink(ctx context.Context, c redis.Cmdable, keys []string, oneByOne bool) error {
	if !oneByOne {
		return c.Unlink(ctx, keys...).Err()
	}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}

// masterCPU returns the CPU seconds of each master of a Redis Cluster, by
// address; nil for a single server.
func masterCPU(ctx context.Context, c redis.UniversalClient) (map[string]float64, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return nil, nil
	}
	var mu sync.Mutex
	out := map[string]float64{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		u, err := redisserver.ReadUsage(ctx, m)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		out[m.Options().Addr] = u.CPUSeconds
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("per-master usage: %w", err)
	}
	return out, nil
}

func roundTrips(stores []*redisstore.Store) int64 {
	var n int64
	for _, s := range stores {
		n += s.Counters().RoundTrips
	}
	return n
}

func audit(calls []history.Call, enqueued map[string][]string, allowDuplicates bool) Audit {
	rep := history.Check(calls, enqueued, nil)
	a := Audit{
		OK: rep.OK(), Calls: rep.Calls, Acked: rep.Acked, Duplicates: rep.Duplicates,
		Overlaps: len(rep.Overlaps), OrderViolations: len(rep.OrderViolations), Lost: len(rep.Lost),
	}
	if !allowDuplicates && rep.Duplicates > 0 {
		a.OK = false
		a.Breaches = append(a.Breaches, fmt.Sprintf("%d duplicate deliveries without a crash", rep.Duplicates))
	}
	for _, list := range [][]string{rep.Overlaps, rep.OrderViolations, rep.Lost, rep.Unexplained} {
		for i, s := range list {
			if i == 5 {
				break
			}
			a.Breaches = append(a.Breaches, s)
		}
	}
	return a
}

func (r *runner) progress(line string) {
	if r.cfg.Progress == nil {
		return
	}
	fmt.Fprintf(r.cfg.Progress, "\r\033[K%s", line)
}

// cpuSeconds returns this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// resetPeakRSS resets the kernel's high-water mark of this process's
// resident memory (Linux), so that peakRSSMB measures one scenario.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB returns the peak resident memory since resetPeakRSS, in MiB.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// countCalls counts the distinct handler calls of a history (a call of a
// batch of k ids is recorded as k entries with one delivery name).
func countCalls(calls []history.Call) int {
	seen := make(map[string]struct{}, len(calls))
	for _, c := range calls {
		seen[c.Delivery] = struct{}{}
	}
	return len(seen)
}
