package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// The harness of the fault tests in this package: three node processes on
// one store under a steady producer, a seeded source of randomness, a
// timeline of what was done when, and the drain and morgue read that end a
// run before its history is audited.

// chaosRand is a test's source of randomness, safe for concurrent use (the
// receivers' handlers draw from it too). Its seed is logged so that a
// failed run can be reproduced.
type chaosRand struct {
	seed uint64
	mu   sync.Mutex // guards rng
	rng  *rand.Rand
}

// newChaosRand seeds a chaosRand from ORDERLY_CHAOS_SEED, else the clock,
// and logs the seed.
func newChaosRand(t *testing.T) *chaosRand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ORDERLY_CHAOS_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "ORDERLY_CHAOS_SEED")
	}
	t.Logf("seed %d (rerun with ORDERLY_CHAOS_SEED=%d)", seed, seed)
	return &chaosRand{seed: seed, rng: rand.New(rand.NewPCG(seed, seed>>1|1))}
}

// intN returns a number in [0, n).
func (r *chaosRand) intN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}

// shuffle shuffles n elements with swap.
func (r *chaosRand) shuffle(n int, swap func(i, j int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rng.Shuffle(n, swap)
}

// envRounds is the number of rounds (at least 1) the environment variable
// name asks for, def when it is not set.
func envRounds(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}

// timeline records what a test did and when, for its log and its failure
// messages; safe for concurrent use.
type timeline struct {
	t     *testing.T
	start time.Time
	mu    sync.Mutex // guards lines
	lines []string
}

func newTimeline(t *testing.T) *timeline { return &timeline{t: t, start: time.Now()} }

// note records and logs one line, stamped with the time since the start.
func (tl *timeline) note(format string, args ...any) {
	line := fmt.Sprintf("%6.2fs  %s", time.Since(tl.start).Seconds(), fmt.Sprintf(format, args...))
	tl.mu.Lock()
	tl.lines = append(tl.lines, line)
	tl.mu.Unlock()
	tl.t.Log(line)
}

// String returns the lines recorded so far, one a line.
func (tl *timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return strings.Join(tl.lines, "\n")
}

// startTrio starts three nodes, <prefix>1 to <prefix>3, from base: each on
// its own fixed HTTP and gossip ports (so that a restart from its options
// comes back on the same addresses), with a lease_ttl of 1s and a
// shutdown timeout of 5s, the second and third joining the first. edit, if
// not nil, adjusts each node's options before it starts. It waits until
// every node is ready and returns their options and the nodes.
func startTrio(t *testing.T, prefix string, base nodetest.Options, edit func(i int, o *nodetest.Options)) ([]nodetest.Options, []*nodetest.Node) {
	t.Helper()
	opts := make([]nodetest.Options, 3)
	nodes := make([]*nodetest.Node, 3)
	for i := range nodes {
		o := base
		hp, err := redistest.FreePort()
		require.NoError(t, err)
		gp, err := redistest.FreePort()
		require.NoError(t, err)
		o.Name, o.HTTPPort, o.GossipPort = fmt.Sprintf("%s%d", prefix, i+1), hp, gp
		o.Args = append([]string{"--lease-ttl", "1s", "--shutdown-timeout", "5s"}, base.Args...)
		if i > 0 {
			o.Args = append(o.Args, "--join", nodes[0].Gossip)
		}
		if edit != nil {
			edit(i, &o)
		}
		opts[i] = o
		nodes[i] = nodetest.Start(t, o)
	}
	for _, n := range nodes {
		n.WaitReady()
	}
	return opts, nodes
}

// startJoined starts n nodes from base on free ports, every one after the
// first joining the first, and returns them once they answer.
func startJoined(t *testing.T, n int, base nodetest.Options) []*nodetest.Node {
	t.Helper()
	nodes := []*nodetest.Node{nodetest.Start(t, base)}
	for range n - 1 {
		o := base
		o.Args = append(append([]string(nil), base.Args...), "--join", nodes[0].Gossip)
		nodes = append(nodes, nodetest.Start(t, o))
	}
	return nodes
}

// ordersConfig is a config file with the queue orders: shards shards,
// batches of 4 ids, a linear retry of 20ms, handled by the webhook at url
// within timeout (a duration in the config's syntax).
func ordersConfig(url string, shards int, timeout string) string {
	return fmt.Sprintf(`
queues:
  - name: orders
    shards: %d
    batch_size: 4
    retry: {policy: linear, base: 20ms}
    handler: {type: http, url: %q, timeout: %s}
`, shards, url, timeout)
}

// failSome fails each id of the call with a chance of 1 in n.
func failSome(a *webhooktest.Answer, c *webhooktest.Call, rnd func(int) int, n int) {
	for _, j := range c.Request.Jobs {
		if rnd(n) == 0 {
			if a.Failed == nil {
				a.Failed = map[string]string{}
			}
			a.Failed[j.ID] = "random failure"
		}
	}
}

// directStore is a store on the Redis at addr, through a client that
// fails fast (no retries, short dials) so that an outage refuses writes
// rather than blocking them. The client is closed when the test ends.
func directStore(t *testing.T, addr string) *redisstore.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	store, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	return store
}

// produceOrders enqueues rising scores to 40 ids of the queue orders
// through store, a round every 15ms, each bounded to 2s, until Stop or the
// end of the test.
func produceOrders(t *testing.T, store persistence.Store) *history.Producer {
	t.Helper()
	producer := history.Produce(40, 15*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return store.Enqueue(ctx, "orders", jobs)
	})
	t.Cleanup(producer.Stop)
	return producer
}

// waitDrained waits until queue is empty with nothing in flight and the
// receiver answered every delivery, so that its record is complete; on a
// timeout it fails with the timeline.
func waitDrained(t *testing.T, store persistence.Store, rcv *webhooktest.Receiver, queue string, timeout time.Duration, tl *timeline) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := store.Stats(context.Background(), queue)
		return err == nil && st[0].Length == 0 && st[0].Busy == 0 && rcv.Active() == 0
	}, timeout, 50*time.Millisecond, "%s drains and the receiver answered every delivery\ntimeline:\n%s", queue, tl)
	tl.note("%s empty", queue)
}

// morgueOf reads the payloads in the morgue of queue (up to 1000 ids), by
// id; it fails the test if an id holds more payloads than a listing shows
// (1000), rather than audit a part.
func morgueOf(t *testing.T, store persistence.Store, queue string) map[string][]string {
	t.Helper()
	page, err := store.ListMorgue(context.Background(), queue, persistence.ListOptions{Limit: 1000, Payloads: persistence.MaxLookupPayloads})
	require.NoError(t, err)
	morgue := map[string][]string{}
	for _, m := range page.Entries {
		require.Len(t, m.Payloads, m.PayloadCount, "the morgue entry of %s is read whole", m.ID)
		for _, p := range m.Payloads {
			morgue[m.ID] = append(morgue[m.ID], string(p.Data))
		}
	}
	return morgue
}

// countPayloads counts the payloads of a map from ids to payloads.
func countPayloads(m map[string][]string) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}
