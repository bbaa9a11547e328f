package orderly_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
)

// member is one in-process cluster node of a test.
type member struct {
	name  string
	node  *orderly.Node
	store *redisstore.Store
	addr  string // gossip address
}

type clusterEnv struct {
	t       *testing.T
	db      *redistest.DB
	network *clustertest.Network
	rec     history.Recorder
	seeds   []string
}

func newClusterEnv(t *testing.T) *clusterEnv {
	return &clusterEnv{t: t, db: redistest.New(t), network: clustertest.NewNetwork()}
}

// start starts a node whose handler records calls (and sleeps a little);
// redisAddr is where its store connects (the server, or a proxy to it).
func (c *clusterEnv) start(name, redisAddr string, handler orderly.HandlerFunc, shards int) *member {
	c.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
	c.t.Cleanup(func() { rdb.Close() })
	store, err := redisstore.New(rdb, &redisstore.Config{Prefix: c.db.Prefix})
	require.NoError(c.t, err)
	tr, addr := c.network.Transport(c.t)
	if handler == nil {
		handler = c.recording(name, 2*time.Millisecond)
	}
	n, err := orderly.NewNode(store, &orderly.Config{
		Name: name, Logger: clusterLog(c.t, name), LeaseTTL: time.Second, Concurrency: 4,
		Cluster: orderly.WithTransport(&orderly.ClusterConfig{Bind: addr, Join: c.seeds, RejoinInterval: 300 * time.Millisecond}, tr),
		Workers: []orderly.Worker{{Queue: "q", Shards: shards, BatchSize: 3, Timeout: 3 * time.Second, RetryIn: orderly.LinearRetry(10 * time.Millisecond), Handler: handler}},
	})
	require.NoError(c.t, err)
	require.NoError(c.t, n.Start(context.Background()))
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.StopAndCancel(ctx)
	})
	if len(c.seeds) == 0 {
		c.seeds = []string{addr}
	}
	return &member{name: name, node: n, store: store, addr: addr}
}

// recording returns a handler that records its calls as node name.
func (c *clusterEnv) recording(name string, sleep time.Duration) orderly.HandlerFunc {
	return func(ctx context.Context, b *orderly.Batch) error {
		start := time.Now()
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
		}
		acked := ctx.Err() == nil
		end := time.Now()
		for _, j := range b.Jobs {
			call := history.Call{ID: j.ID, Node: name, Delivery: b.Delivery, Start: start, End: end, Acked: acked}
			for _, p := range j.Payloads {
				call.Payloads = append(call.Payloads, history.Payload{Data: string(p.Data), Score: p.Score})
			}
			c.rec.Add(call)
		}
		return ctx.Err()
	}
}

// produce enqueues rising scores to 20 ids through s until Stop.
func produce(s persistence.Store) *history.Producer {
	return history.Produce(20, 5*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return s.Enqueue(ctx, "q", jobs)
	})
}

func seesAll(m *member, n int) bool {
	alive := 0
	for _, x := range m.node.Members() {
		if x.State == orderly.MemberAlive {
			alive++
		}
	}
	return alive == n
}

func (c *clusterEnv) drained(s persistence.Store) func() bool {
	return func() bool {
		st, err := s.Stats(context.Background(), "q")
		return err == nil && st[0].Length == 0 && st[0].Busy == 0
	}
}

func (c *clusterEnv) check(s persistence.Store, enqueued map[string][]string) history.Report {
	c.t.Helper()
	page, err := s.ListMorgue(context.Background(), "q", persistence.ListOptions{Limit: 1000})
	require.NoError(c.t, err)
	require.Empty(c.t, page.Entries)
	rep := history.Check(c.rec.Calls(), enqueued, nil)
	c.t.Log(rep.String())
	require.True(c.t, rep.OK(), rep.String())
	return rep
}

// TestClusterPartition cuts one node's gossip off while it still reaches
// Redis: both sides assign themselves every shard, yet the leases keep one
// holder per shard, handlers never overlap, and after the heal the nodes
// form one cluster again; nothing is lost.
func TestClusterPartition(t *testing.T) {
	t.Parallel()
	c := newClusterEnv(t)
	n1 := c.start("n1", c.db.Addr, nil, 12)
	n2 := c.start("n2", c.db.Addr, nil, 12)
	n3 := c.start("n3", c.db.Addr, nil, 12)
	all := []*member{n1, n2, n3}
	for _, m := range all {
		require.Eventually(t, func() bool { return seesAll(m, 3) }, 10*time.Second, 10*time.Millisecond)
	}

	producer := produce(n1.store)
	time.Sleep(500 * time.Millisecond)

	c.network.Isolate(n3.addr)
	require.Eventually(t, func() bool { return seesAll(n1, 2) && seesAll(n3, 1) }, 10*time.Second, 10*time.Millisecond, "the sides see each other as dead")
	// During the partition, sample who serves what: no shard may be served
	// by two nodes at once.
	var overlaps atomic.Int32
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		serving := map[persistence.ShardRef]string{}
		for _, m := range all {
			st, err := m.node.Status(context.Background())
			require.NoError(t, err)
			for _, r := range st.Shards {
				if !r.Serving {
					continue
				}
				if other, ok := serving[r.Ref]; ok {
					t.Errorf("shard %v served by %s and %s", r.Ref, other, m.name)
					overlaps.Add(1)
				}
				serving[r.Ref] = m.name
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Zero(t, overlaps.Load())

	c.network.Heal(n3.addr)
	for _, m := range all {
		require.Eventually(t, func() bool { return seesAll(m, 3) }, 15*time.Second, 10*time.Millisecond, "one cluster again")
	}
	producer.Stop()
	require.Eventually(t, c.drained(n1.store), 30*time.Second, 20*time.Millisecond)
	c.check(n1.store, producer.Enqueued())
}

// TestClusterNodeLosingRedis cuts one node's connections to Redis: it
// cancels its handlers before its leases can expire, advertises itself
// unhealthy, and the other node serves its shards; when Redis returns it
// serves again. Handlers of one id never overlap; nothing is lost.
func TestClusterNodeLosingRedis(t *testing.T) {
	t.Parallel()
	c := newClusterEnv(t)
	proxy := redistest.NewProxy(t, c.db.Addr)
	var running, cancelled atomic.Int32
	slow := func(ctx context.Context, b *orderly.Batch) error {
		running.Add(1)
		err := c.recording("a", time.Hour)(ctx, b) // holds its batch until cancelled
		cancelled.Add(1)
		return err
	}
	a := c.start("a", proxy.Addr, slow, 6)
	b := c.start("b", c.db.Addr, nil, 6)
	require.Eventually(t, func() bool { return seesAll(a, 2) && seesAll(b, 2) }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		st, _ := a.node.Status(context.Background())
		return st.Serving > 0
	}, 10*time.Second, 10*time.Millisecond, "a serves some shards")

	var jobs []persistence.NewJob
	enqueued := map[string][]string{}
	for i := range 30 {
		id, p := fmt.Sprintf("id-%d", i), fmt.Sprintf("p-%d", i)
		jobs = append(jobs, persistence.NewJob{ID: id, Payload: []byte(p)})
		enqueued[id] = []string{p}
	}
	require.NoError(t, b.store.Enqueue(context.Background(), "q", jobs))
	require.Eventually(t, func() bool { return running.Load() > 0 }, 10*time.Second, 10*time.Millisecond, "a holds a batch")

	cut := time.Now()
	proxy.Cut()
	require.Eventually(t, func() bool { return cancelled.Load() == running.Load() }, 10*time.Second, time.Millisecond, "a cancelled its handlers")
	t.Logf("a cancelled its handlers %s after the cut (lease TTL 1s)", time.Since(cut).Round(time.Millisecond))
	require.Eventually(t, func() bool {
		for _, m := range b.node.Members() {
			if m.Name == "a" {
				return m.Unhealthy
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a advertises unhealthy")
	require.Eventually(t, c.drained(b.store), 20*time.Second, 20*time.Millisecond, "b served a's shards")
	t.Logf("a's shards served by b within %s of the cut; %d of a's handlers cancelled", time.Since(cut).Round(time.Millisecond), cancelled.Load())
	c.check(b.store, enqueued)

	proxy.Restore(t)
	require.Eventually(t, func() bool {
		st, _ := a.node.Status(context.Background())
		return st.Serving > 0
	}, 20*time.Second, 20*time.Millisecond, "a serves again once Redis is back")
}

// clusterLog returns the logger of an in-process node: warnings to the
// test's log, or debug logs on stderr when ORDERLY_DEBUG_CLUSTER names the
// node.
func clusterLog(t *testing.T, name string) *slog.Logger {
	if os.Getenv("ORDERLY_DEBUG_CLUSTER") == name {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return testLogger(t)
}
