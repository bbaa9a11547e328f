package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/persistence/redisurl"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// haRun is one run of three node processes under load on a replicated
// Redis (Cluster or Sentinel) while a Redis master and a node are killed.
type haRun struct {
	t         *testing.T
	url       string   // the nodes' Redis URL
	args      []string // extra node arguments
	killRedis func(note func(string, ...any))
}

// run starts the nodes and a producer that writes through its own client of
// the same URL, kills a master (killRedis) and a node under load, drains the
// queue and audits the history: nothing acknowledged lost, no overlap, no
// disorder.
func (r haRun) run() {
	t := r.t
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		return webhooktest.Answer{Delay: 2 * time.Millisecond}
	})
	cfg := ordersConfig(rcv.URL, 12, "5s")
	tl := newTimeline(t)
	note := tl.note
	opts, nodes := startTrio(t, "h", nodetest.Options{Redis: r.url, Config: cfg, Args: r.args}, nil)
	note("3 nodes ready on %s", redisurl.Redact(r.url))

	u, err := redisurl.Parse(r.url)
	require.NoError(t, err)
	rdb := u.NewClient()
	t.Cleanup(func() { rdb.Close() })
	scfg := &redisstore.Config{}
	if strings.Contains(strings.Join(r.args, " "), "replicated") {
		scfg.Durability = redisstore.DurabilityReplicated
	}
	store, err := redisstore.New(rdb, scfg)
	require.NoError(t, err)
	producer := produceOrders(t, store)

	// How many times the run kills a Redis master and a node under load
	// (make soak-ha sets it).
	rounds := envRounds(t, "ORDERLY_HA_ROUNDS", 1)
	for round := range rounds {
		if rounds > 1 {
			note("round %d of %d", round+1, rounds)
		}
		time.Sleep(2 * time.Second)
		r.killRedis(note)
		time.Sleep(2 * time.Second)
		victim := 1 + round%2
		note("SIGKILL %s", opts[victim].Name)
		nodes[victim].Kill()
		time.Sleep(time.Second)
		nodes[victim] = nodetest.Start(t, opts[victim])
		note("%s restarted", opts[victim].Name)
		time.Sleep(2 * time.Second)
		nodes[victim].WaitReady()
	}
	producer.Stop()
	note("producer stopped")

	for _, n := range nodes {
		n.WaitReady()
	}
	waitDrained(t, store, rcv, "orders", 90*time.Second, tl)

	enqueued, unsure := producer.Enqueued(), producer.Unsure()
	total := countPayloads(enqueued)
	rep := history.Check(history.FromWebhook(rcv.Calls()), enqueued, nil)
	t.Logf("%d payloads acknowledged to the producer (%d rounds refused), %s\ntimeline:\n%s",
		total, producer.Refused(), rep.String(), tl)
	require.Positive(t, total)
	require.True(t, rep.OK(), rep.String())
	require.GreaterOrEqual(t, rep.Acked, total, "every acknowledged payload was handled")
	require.LessOrEqual(t, rep.Acked, total+len(unsure), "no more payloads handled than were sent")
}

// TestHACluster runs three nodes on a Redis Cluster of three masters with
// one replica each, in the replicated mode, and SIGKILLs a master (its
// replica takes over; the old master comes back as its replica) and a node
// under load.
func TestHACluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("HA chaos test: skipped with -short")
	}
	if redisserver.Binary() == "" || redisserver.CLI() == "" {
		t.Skip("needs redis-server and redis-cli")
	}
	c, err := redisserver.StartCluster(redisserver.ClusterOptions{Masters: 3, Replicas: 1})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	masters, err := c.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)
	url := "redis+cluster://" + strings.Join(c.Addrs(), ",")
	haRun{t: t, url: url, args: []string{"--durability", "replicated"}, killRedis: func(note func(string, ...any)) {
		killClusterMaster(t, c, note, 0)
	}}.run()
}

// killClusterMaster SIGKILLs the first master of c once every replica is in
// sync, waits until a replica took over, leaves the promoted replica
// without a replica of its own for down (its replicated writes fail
// meanwhile) and restarts the old master, which comes back as its replica.
func killClusterMaster(t *testing.T, c *redisserver.Cluster, note func(string, ...any), down time.Duration) {
	ctx := context.Background()
	// Shards spread over every master.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cc.Close()
	var mu sync.Mutex // guards holding (ForEachMaster runs in parallel)
	var holding []string
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if n > 0 {
			mu.Lock()
			holding = append(holding, m.Options().Addr)
			mu.Unlock()
		}
		return err
	}))
	require.Len(t, holding, 3, "every master holds keys of some shard")
	// The first master now (after a round, a promoted replica).
	current, err := c.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, current, 3)
	victim := current[0]
	// A replica that has not synced with its master yet does not
	// take over: wait until every replica's link is up.
	for _, srv := range c.Servers() {
		if containsServer(current, srv) || srv.Pid() == 0 {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		require.Eventually(t, func() bool {
			info, err := rc.Info(ctx, "replication").Result()
			return err == nil && strings.Contains(info, "master_link_status:up")
		}, 60*time.Second, 50*time.Millisecond, "replica %s never synced", srv.Addr())
		rc.Close()
	}
	note("SIGKILL Redis master %s", victim.Addr())
	victim.Kill()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		ms, err := c.Masters(wctx)
		if err == nil && len(ms) == 3 && !containsServer(ms, victim) && c.WaitOK(wctx) == nil {
			break
		}
		require.NoError(t, wctx.Err(), "no replica took over")
		time.Sleep(100 * time.Millisecond)
	}
	note("a replica took over")
	// The promoted replica has no replica of its own: until the old
	// master is back (as its replica), the replicated writes of its
	// shards fail instead of being acknowledged.
	time.Sleep(down)
	require.NoError(t, victim.Restart())
	note("the old master is back, as a replica")
}

// TestHASentinel runs three nodes on a master with two replicas behind
// three sentinels, in the replicated mode, and SIGKILLs the master (a
// replica is promoted, the nodes follow) and a node under load.
func TestHASentinel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("HA chaos test: skipped with -short")
	}
	if redisserver.Binary() == "" {
		t.Skip("needs redis-server")
	}
	set, err := redisserver.StartSentinel(redisserver.SentinelOptions{Replicas: 2})
	require.NoError(t, err)
	defer set.Close()
	ctx := context.Background()
	haRun{t: t, url: set.URL(), args: []string{"--durability", "replicated"}, killRedis: func(note func(string, ...any)) {
		old, err := set.Master(ctx)
		require.NoError(t, err)
		note("SIGKILL Redis master %s", old.Addr())
		old.Kill()
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		m, err := set.WaitFailover(wctx, old)
		require.NoError(t, err)
		note("Sentinel promoted %s", m.Addr())
		// Back as a replica of the new master, so that the next round
		// (make soak-ha) has a replica to promote.
		require.NoError(t, old.Restart())
		note("the old master is back, as a replica")
	}}.run()
}

func containsServer(list []*redisserver.Server, s *redisserver.Server) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestHASentinelNoMaster runs a node on Sentinel while no master is
// reachable: it turns not ready, hands nothing to its handler, and is ready
// and handles jobs again once the master is back, without a restart.
func TestHASentinelNoMaster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("HA test: skipped with -short")
	}
	if redisserver.Binary() == "" {
		t.Skip("needs redis-server")
	}
	set, err := redisserver.StartSentinel(redisserver.SentinelOptions{Replicas: 1, AOF: true})
	require.NoError(t, err)
	defer set.Close()
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	n := nodetest.Start(t, nodetest.Options{Redis: set.URL(), Args: []string{"--lease-ttl", "1s"}, Config: fmt.Sprintf(`
queues:
  - name: orders
    shards: 2
    handler: {type: http, url: %q, timeout: 5s}
`, rcv.URL)})
	n.WaitReady()
	rdb, err := redisurl.Open(set.URL())
	require.NoError(t, err)
	defer rdb.Close()
	store, err := redisstore.New(rdb, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, store.Enqueue(ctx, "orders", []persistence.NewJob{{ID: "a", Payload: []byte(`"1"`)}}))
	waitCalls := func(want int) {
		deadline := time.Now().Add(60 * time.Second)
		for len(rcv.Calls()) < want {
			require.True(t, time.Now().Before(deadline), "only %d handler calls of %d", len(rcv.Calls()), want)
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCalls(1)

	for _, s := range set.Servers() {
		s.Kill()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _ := n.Do("GET", "/readyz", nil)
		if status == 503 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the node stayed ready without a master")
		time.Sleep(100 * time.Millisecond)
	}
	calls := len(rcv.Calls())
	time.Sleep(2 * time.Second)
	require.Equal(t, calls, len(rcv.Calls()), "no handler call while no master is reachable")

	for _, s := range set.Servers() {
		require.NoError(t, s.Restart())
	}
	n.WaitReady()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		err := store.Enqueue(sctx, "orders", []persistence.NewJob{{ID: "b", Payload: []byte(`"2"`)}})
		if err == nil {
			break
		}
		require.NoError(t, sctx.Err(), "enqueue never succeeded again: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	waitCalls(calls + 1)
}

// TestHAReplicatedRefusesWithoutReplicas runs a node in the replicated mode
// on a master with one replica (behind Sentinel) and kills the replica:
// enqueues over HTTP answer 503 "not replicated" instead of acknowledging,
// and are acknowledged again, without a restart, once the replica is back.
func TestHAReplicatedRefusesWithoutReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("HA test: skipped with -short")
	}
	if redisserver.Binary() == "" {
		t.Skip("needs redis-server")
	}
	set, err := redisserver.StartSentinel(redisserver.SentinelOptions{Replicas: 1})
	require.NoError(t, err)
	defer set.Close()
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	n := nodetest.Start(t, nodetest.Options{Redis: set.URL(), Args: []string{"--durability", "replicated"}, Config: fmt.Sprintf(`
queues:
  - name: orders
    shards: 2
    handler: {type: http, url: %q, timeout: 5s}
`, rcv.URL)})
	n.WaitReady()
	ctx := context.Background()
	master, err := set.Master(ctx)
	require.NoError(t, err)
	var replica *redisserver.Server
	for _, s := range set.Servers() {
		if s != master {
			replica = s
		}
	}
	require.NotNil(t, replica)

	i := 0
	// enqueue posts one new job and returns the node's answer.
	enqueue := func() (int, string) {
		i++
		code, body := n.Do("POST", "/api/v1/queues/orders/jobs", []byte(fmt.Sprintf(`[{"id": "id-%d", "payload": %d}]`, i, i)))
		return code, string(body)
	}
	// until posts jobs until the node answers want, for at most a minute.
	until := func(want int, stage string) string {
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, body := enqueue()
			if code == want {
				return body
			}
			require.True(t, time.Now().Before(deadline), "%s: the node still answers %d %s", stage, code, body)
			time.Sleep(100 * time.Millisecond)
		}
	}
	until(202, "with the replica up")

	replica.Kill()
	body := until(503, "with the replica down")
	require.Contains(t, body, "not replicated")
	// Every further enqueue is refused while the replica is down.
	for range 3 {
		code, body := enqueue()
		require.Equal(t, 503, code, body)
	}

	require.NoError(t, replica.Restart())
	until(202, "with the replica back")
}

// TestRedisPasswordNeverLogged runs a node on a password-protected Redis,
// reachable and then not, with debug logs: its logs name the Redis URL with
// the password as xxxxx and never print the password.
func TestRedisPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	require.NoError(t, srv.Client(t).ConfigSet(context.Background(), "requirepass", "PW-NEVER-LOGGED").Err())
	url := "redis://:PW-NEVER-LOGGED@" + srv.Addr() + "/0"
	n := nodetest.Start(t, nodetest.Options{Redis: url, Args: []string{"--log-level", "debug"}})
	n.WaitReady()
	srv.Kill(t)
	status := 0
	for deadline := time.Now().Add(60 * time.Second); status != 503; {
		status, _ = n.Do("GET", "/readyz", nil)
		require.True(t, time.Now().Before(deadline), "the node stayed ready without Redis")
		time.Sleep(100 * time.Millisecond)
	}
	logs := n.Logs()
	require.Contains(t, logs, "xxxxx@"+srv.Addr(), "the logs name the Redis URL")
	require.NotContains(t, logs, "PW-NEVER-LOGGED")
	code, body := n.Do("GET", "/api/v1/queues", nil)
	require.NotContains(t, string(body), "PW-NEVER-LOGGED", "HTTP %d", code)
}
