package main

import (
	"context"
	"encoding/json"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// fleet is the set of nodes a rolling test sends its load to; it changes as
// nodes are replaced.
type fleet struct {
	mu    sync.Mutex // guards nodes, turn
	nodes []*nodetest.Node
	turn  int
}

func (f *fleet) set(nodes ...*nodetest.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = nodes
}

// send enqueues one round through the nodes in turn (the first that takes
// it), so that every node of the fleet, old or new, accepts a share.
func (f *fleet) send(_ context.Context, jobs []persistence.NewJob) error {
	body := make([]map[string]any, len(jobs))
	for i, j := range jobs {
		body[i] = map[string]any{"id": j.ID, "payload": json.RawMessage(j.Payload), "score": *j.Score}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	f.mu.Lock()
	nodes := append([]*nodetest.Node(nil), f.nodes...)
	f.turn++
	turn := f.turn
	f.mu.Unlock()
	ordered := make([]*nodetest.Node, len(nodes))
	for i := range nodes {
		ordered[i] = nodes[(turn+i)%len(nodes)]
	}
	return sendRound(ordered, b)
}

// layout1Leftovers counts what is left in the previous release's keys
// (storage layout 1) of the queue: queued ids and per-id payload sets.
func layout1Leftovers(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	ctx := context.Background()
	left := 0
	for _, pattern := range []string{"orderly:{orders:*}:due", "orderly:{orders:*}:p:*", "orderly:{orders:*}:inflight"} {
		keys, err := rdb.Keys(ctx, pattern).Result()
		require.NoError(t, err)
		for _, k := range keys {
			typ, err := rdb.Type(ctx, k).Result()
			require.NoError(t, err)
			var n int64
			switch typ {
			case "zset":
				n, err = rdb.ZCard(ctx, k).Result()
			case "hash":
				n, err = rdb.HLen(ctx, k).Result()
			case "set":
				n, err = rdb.SCard(ctx, k).Result()
			case "string":
				n = 1
			}
			require.NoError(t, err)
			if n > 0 {
				t.Logf("layout 1 key %s (%s) still holds %d", k, typ, n)
			}
			left += int(n)
		}
	}
	return left
}

// TestRollingUpgradeFromPreviousRelease: three nodes of the previous release
// (storage layout 1, built from git) serve a queue under load with random
// failures and retries; they are replaced one at a time by nodes of this
// release - the first and last stopped with SIGTERM, the middle one killed
// with SIGKILL - while the load keeps coming through every node that is up,
// old ones included. At the end nothing is left in layout 1's keys, and the
// receivers' history shows no overlap, no disorder and nothing lost
// (docs/storage.md §8, README "Upgrading and rolling back").
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	t.Parallel()
	old := nodetest.ReleaseBinary(t, nodetest.PreviousRelease)
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	rnd := newChaosRand(t).intN
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{Delay: time.Duration(rnd(10)) * time.Millisecond}
		if rnd(25) == 0 {
			a.Failed = map[string]string{c.Request.Jobs[0].ID: "random failure"}
		}
		return a
	})
	cfg := clusterConfig(rcv.URL) + "    retry: {policy: linear, base: 50ms}\n"

	olds := startJoined(t, 3, nodetest.Options{Binary: old, Redis: srv.URL(), Config: cfg})
	o1, o2, o3 := olds[0], olds[1], olds[2]
	eventually(t, "3 nodes of the previous release serve every shard", func() bool {
		v, ok := viewOf(t, o1)
		return ok && len(alive(v)) == 3 && servedBy(v, o1.Name, o2.Name, o3.Name)
	})

	f := &fleet{}
	f.set(o1, o2, o3)
	producer := history.Produce(30, 10*time.Millisecond, f.send)
	time.Sleep(2 * time.Second)

	var news []*nodetest.Node
	for i, o := range olds {
		if i == 1 {
			o.Kill()
		} else {
			o.Signal(syscall.SIGTERM)
			require.Equal(t, 0, o.Wait(30*time.Second), "the old node %s stops cleanly", o.Name)
		}
		seed := olds[len(olds)-1].Gossip
		if len(news) > 0 {
			seed = news[0].Gossip
		}
		n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Args: []string{"--join", seed}})
		news = append(news, n)
		up := append(append([]*nodetest.Node(nil), news...), olds[i+1:]...)
		f.set(up...)
		names := make([]string, len(up))
		for k, u := range up {
			names[k] = u.Name
		}
		eventually(t, "every shard served by the nodes up after replacing "+o.Name, func() bool {
			v, ok := viewOf(t, n)
			return ok && servedBy(v, names...)
		})
		v, _ := viewOf(t, n)
		t.Logf("after replacing %s by %s: %v", o.Name, n.Name, owners(v))
		time.Sleep(2 * time.Second)
	}
	producer.Stop()
	waitEmpty(t, news[0], rcv)

	rdb := srv.Client(t)
	// What the last previous-release node enqueued into its layout after
	// the shard was fenced is drained by the shard's owner at its next
	// idle poll at the latest.
	require.Eventually(t, func() bool { return layout1Leftovers(t, rdb) == 0 },
		20*time.Second, 500*time.Millisecond, "nothing stranded in the previous release's layout")
	waitEmpty(t, news[0], rcv)
	layout, err := rdb.Get(context.Background(), "orderly:layout").Result()
	require.NoError(t, err)
	require.Equal(t, "2", layout, "the store records its layout once every shard is upgraded")

	rep := history.Check(history.FromWebhook(rcv.Calls()), producer.Enqueued(), nil)
	t.Logf("%s; %d rounds refused", rep.String(), producer.Refused())
	require.True(t, rep.OK(), rep.String())
}
