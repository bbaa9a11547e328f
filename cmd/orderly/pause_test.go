package main

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
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
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	rounds := envRounds(t, "ORDERLY_PAUSE_ROUNDS", 4)
	rng := newChaosRand(t)
	rnd := rng.intN

	var dmu sync.Mutex // guards noDeadline
	noDeadline := 0    // calls that arrived without a readable Orderly-Deadline
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Delay: time.Duration(100+rnd(600)) * time.Millisecond}
		d, ok := wire.ParseDeadline(c.Header.Get(wire.DeadlineHeader))
		if !ok {
			dmu.Lock()
			noDeadline++
			dmu.Unlock()
		} else if left := time.Until(d) - 20*time.Millisecond; a.Delay > left {
			// A receiver that honours the deadline stops by then.
			a.Delay = max(left, 0)
		}
		failSome(&a, c, rnd, 30)
		return a
	})
	cfg := ordersConfig(rcv.URL, 8, "2s")

	tl := newTimeline(t)
	note := tl.note
	_, nodes := startTrio(t, "p", nodetest.Options{Redis: "redis://" + srv.Addr() + "/0", Config: cfg}, nil)
	note("3 nodes ready")

	store := directStore(t, srv.Addr())
	producer := produceOrders(t, store)

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
	waitDrained(t, store, rcv, "orders", 60*time.Second, tl)

	morgue := morgueOf(t, store, "orders")
	enqueued := producer.Enqueued()
	total := countPayloads(enqueued)
	calls := rcv.Calls()
	late := 0 // calls the receiver answered after their deadline: the model failed
	for _, c := range calls {
		if d, ok := wire.ParseDeadline(c.Header.Get(wire.DeadlineHeader)); ok && c.End.After(d.Add(50*time.Millisecond)) && !c.Cut {
			late++
		}
	}
	rep := history.Check(history.FromWebhook(calls), enqueued, morgue)
	t.Logf("seed %d: %d rounds, %d payloads acknowledged to the producer, %d in the morgue, %d calls ran past their deadline; %s\ntimeline:\n%s",
		rng.seed, rounds, total, len(morgue), late, rep.String(), tl)
	dmu.Lock()
	require.Zero(t, noDeadline, "every delivery carries Orderly-Deadline")
	dmu.Unlock()
	require.True(t, rep.OK(), "seed %d: %s", rng.seed, rep.String())
	require.Greater(t, rep.Acked, 0, "the load was handled")
}
