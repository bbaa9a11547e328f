package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/nodetest"
	"github.com/orderlyhq/orderly/internal/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/webhook"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// TestChaosPause runs three node processes under load with slow webhook
// receivers (every call works for 100-700 ms) and, round after round,
// freezes one node with SIGSTOP for longer than lease_ttl, then SIGCONTs it.
// A frozen node may be in the middle of calls; when it resumes it must not
// start any further call under the lease it lost, and the node that took
// the shard over must not call the ids of a restored in-flight record before
// that record's Orderly-Deadline.
//
// The receivers model a well-behaved downstream: each stops working on a
// delivery by the delivery's Orderly-Deadline (a receiver that ignores it
// may run past it: that residue is documented, not tested). Overlaps are
// counted from the receivers' own timestamps (a call lasts from the
// request's arrival to the answer), and the audit wants 0 overlaps, 0
// disorder, 0 lost. ORDERLY_PAUSE_ROUNDS sets the number of pauses (default
// 4); ORDERLY_CHAOS_SEED reproduces a run.
func TestChaosPause(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	rounds := 4
	if v := os.Getenv("ORDERLY_PAUSE_ROUNDS"); v != "" {
		var err error
		rounds, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ORDERLY_CHAOS_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (rerun with ORDERLY_CHAOS_SEED=%d), %d rounds", seed, seed, rounds)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	var rmu sync.Mutex // guards rng
	rnd := func(n int) int { rmu.Lock(); defer rmu.Unlock(); return rng.IntN(n) }

	var dmu sync.Mutex // guards noDeadline
	noDeadline := 0    // calls that arrived without a readable Orderly-Deadline
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Delay: time.Duration(100+rnd(600)) * time.Millisecond, Failed: map[string]string{}}
		d, ok := webhook.ParseDeadline(c.Header.Get(webhook.DeadlineHeader))
		if !ok {
			dmu.Lock()
			noDeadline++
			dmu.Unlock()
		} else if left := time.Until(d) - 20*time.Millisecond; a.Delay > left {
			// A receiver that honours the deadline stops by then.
			a.Delay = max(left, 0)
		}
		for _, j := range c.Request.Jobs {
			if rnd(30) == 0 {
				a.Failed[j.ID] = "random failure"
			}
		}
		return a
	})
	cfg := fmt.Sprintf(`
queues:
  - name: orders
    shards: 8
    batch_size: 4
    retry: {policy: linear, base: 20ms}
    handler: {type: http, url: %q, timeout: 2s}
`, rcv.URL)

	var timeline []string
	start := time.Now()
	note := func(format string, args ...any) {
		line := fmt.Sprintf("%6.2fs  %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
		timeline = append(timeline, line)
		t.Log(line)
	}

	nodes := make([]*nodetest.Node, 3)
	for i := range nodes {
		hp, err := redistest.FreePort()
		require.NoError(t, err)
		gp, err := redistest.FreePort()
		require.NoError(t, err)
		o := nodetest.Options{Name: fmt.Sprintf("p%d", i+1), Redis: "redis://" + srv.Addr() + "/0", Config: cfg,
			HTTPPort: hp, GossipPort: gp, Args: []string{"--lease-ttl", "1s", "--shutdown-timeout", "5s"}}
		if i > 0 {
			o.Args = append(o.Args, "--join", nodes[0].Gossip)
		}
		nodes[i] = nodetest.Start(t, o)
	}
	for _, n := range nodes {
		n.WaitReady()
	}
	note("3 nodes ready")

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	store, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	producer := history.Produce(40, 15*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return store.Enqueue(ctx, "orders", jobs)
	})
	defer producer.Stop()

	time.Sleep(2 * time.Second)
	for r := 0; r < rounds; r++ {
		i := rnd(len(nodes))
		n := nodes[i]
		pause := time.Duration(1500+rnd(1500)) * time.Millisecond // lease_ttl is 1 s
		note("round %d: SIGSTOP p%d for %v", r+1, i+1, pause)
		n.Signal(syscall.SIGSTOP)
		time.Sleep(pause)
		n.Signal(syscall.SIGCONT)
		note("round %d: SIGCONT p%d", r+1, i+1)
		time.Sleep(time.Duration(1500+rnd(1500)) * time.Millisecond)
	}
	producer.Stop()
	note("producer stopped")

	for _, n := range nodes {
		n.WaitReady()
	}
	require.Eventually(t, func() bool {
		st, err := store.Stats(context.Background(), "orders")
		return err == nil && st[0].Length == 0 && st[0].Busy == 0 && rcv.Active() == 0
	}, 60*time.Second, 50*time.Millisecond, "the queue drains and the receiver answered every delivery")
	note("queue empty")

	morgue := map[string][]string{}
	page, err := store.ListMorgue(context.Background(), "orders", persistence.ListOptions{Limit: 1000, Payloads: 1000})
	require.NoError(t, err)
	for _, m := range page.Entries {
		for _, p := range m.Payloads {
			morgue[m.ID] = append(morgue[m.ID], string(p.Data))
		}
	}
	enqueued := producer.Enqueued()
	total := 0
	for _, ps := range enqueued {
		total += len(ps)
	}
	calls := rcv.Calls()
	late := 0 // calls the receiver answered after their deadline: the model failed
	for _, c := range calls {
		if d, ok := webhook.ParseDeadline(c.Header.Get(webhook.DeadlineHeader)); ok && c.End.After(d.Add(50*time.Millisecond)) && !c.Cut {
			late++
		}
	}
	rep := history.Check(history.FromWebhook(calls), enqueued, morgue)
	t.Logf("seed %d: %d rounds, %d payloads acknowledged to the producer, %d in the morgue, %d calls ran past their deadline; %s\ntimeline:\n%s",
		seed, rounds, total, len(morgue), late, rep.String(), strings.Join(timeline, "\n"))
	dmu.Lock()
	require.Zero(t, noDeadline, "every delivery carries Orderly-Deadline")
	dmu.Unlock()
	require.True(t, rep.OK(), "seed %d: %s", seed, rep.String())
	require.Greater(t, rep.Acked, 0, "the load was handled")
}
