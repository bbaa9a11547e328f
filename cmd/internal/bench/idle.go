package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// idleSettle is how long an idle scenario lets the node settle after all its
// shards are served (first fetches, morgue retention, the first renewals)
// before it measures.
const idleSettle = 3 * time.Second

// queueName names the q-th queue of a scenario with several (the first is
// queue).
func queueName(q int) string {
	if q == 0 {
		return queue
	}
	return queue + "-" + strconv.Itoa(q)
}

// idle starts one node serving the scenario's queues, waits until it serves
// every shard, lets it settle, then measures for Config.Idle while nothing
// is enqueued: the node's Redis round trips, the commands Redis ran, and the
// CPU time of this process (the node; the harness sleeps) and of Redis.
func (r *runner) idle(ctx context.Context, sc scenario, res *Result) error {
	c, _, prefix, err := r.admin(sc)
	if err != nil {
		return err
	}
	defer c.Close()
	res.Queues = max(sc.queues, 1)
	rc := &recorder{}
	r.progress(fmt.Sprintf("%s: starting a node serving %d queues x %d shards", sc.name, res.Queues, sc.shards))
	nodes, stores, stop, err := r.startNodes(ctx, sc, prefix, rc.handler)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for !ready(ctx, nodes) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node not serving every shard after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(idleSettle)
	before, err := redisserver.ReadUsage(ctx, c)
	if err != nil {
		return err
	}
	c0 := counters(stores)
	cpu0 := cpuSeconds()
	t0 := time.Now()
	for left := r.cfg.Idle; left > 0; left = r.cfg.Idle - time.Since(t0) {
		r.progress(fmt.Sprintf("%s: measuring an idle node, %s left", sc.name, left.Round(time.Second)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, time.Second)):
		}
	}
	wall := time.Since(t0)
	res.CPUSec = cpuSeconds() - cpu0
	sent := counters(stores).Sub(c0)
	after, err := redisserver.ReadUsage(ctx, c)
	if err != nil {
		return err
	}
	used := after.Sub(before)
	mins := wall.Minutes()
	res.IdleSec = wall.Seconds()
	res.RedisCPUSec = used.CPUSeconds
	res.RoundTripsPerMin = float64(sent.RoundTrips) / mins
	res.NodeCmdsPerMin = float64(sent.Commands) / mins
	res.RedisCmdsPerMin = float64(used.Commands) / mins
	res.CPUPercent = res.CPUSec / wall.Seconds() * 100
	res.RedisCPUPercent = used.CPUSeconds / wall.Seconds() * 100
	res.Audit = audit(rc.rec.Calls(), map[string][]string{}, false)
	stop()
	stopped = true
	return cleanup(ctx, c, prefix)
}

// counters sums the client counters of the stores.
func counters(stores []*redisstore.Store) redisstore.Counters {
	var sum redisstore.Counters
	for _, s := range stores {
		c := s.Counters()
		sum.RoundTrips += c.RoundTrips
		sum.Commands += c.Commands
	}
	return sum
}
