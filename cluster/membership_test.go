package cluster_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, nw *clustertest.Network, name string, join []string, meta cluster.Meta) (*cluster.Membership, string) {
	t.Helper()
	tr, addr := nw.Transport(t)
	m, err := cluster.Start(t.Context(), &cluster.Config{
		Name: name, Bind: addr, Join: join, Meta: meta, Transport: tr,
		RejoinInterval: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(m.Shutdown)
	return m, addr
}

func states(m *cluster.Membership) map[string]string {
	out := map[string]string{}
	for _, mem := range m.Members() {
		out[mem.Name] = mem.State
	}
	return out
}

func TestMembershipJoinMetaLeaveAndCrash(t *testing.T) {
	nw := clustertest.NewNetwork()
	a, seed := start(t, nw, "a", nil, cluster.Meta{HTTP: "127.0.0.1:1", Queues: []string{"q"}})
	b, _ := start(t, nw, "b", []string{seed}, cluster.Meta{Queues: []string{"q"}})
	c, _ := start(t, nw, "c", []string{seed}, cluster.Meta{Queues: []string{"q"}})
	all := map[string]string{"a": "alive", "b": "alive", "c": "alive"}
	for _, m := range []*cluster.Membership{a, b, c} {
		require.Eventually(t, func() bool { return equal(states(m), all) }, 5*time.Second, 10*time.Millisecond)
	}
	require.Equal(t, "127.0.0.1:1", c.Members()[0].Meta.HTTP, "metadata travels")

	require.NoError(t, b.SetMeta(context.Background(), func(m *cluster.Meta) { m.Draining = true }))
	require.Eventually(t, func() bool { return states(a)["b"] == "draining" }, 5*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, b.Leave(ctx))
	require.Eventually(t, func() bool { _, ok := states(a)["b"]; return !ok }, 5*time.Second, 10*time.Millisecond, "a graceful leave is not a death")

	c.Shutdown() // a crash: no leave message
	start := time.Now()
	require.Eventually(t, func() bool { return states(a)["c"] == "dead" }, 10*time.Second, 10*time.Millisecond)
	t.Logf("crash detected in %s", time.Since(start).Round(time.Millisecond))
}

func TestPartitionHealsThroughRejoin(t *testing.T) {
	nw := clustertest.NewNetwork()
	a, seed := start(t, nw, "a", nil, cluster.Meta{})
	b, _ := start(t, nw, "b", []string{seed}, cluster.Meta{})
	c, addrC := start(t, nw, "c", []string{seed}, cluster.Meta{})
	for _, m := range []*cluster.Membership{a, b, c} {
		require.Eventually(t, func() bool { return len(states(m)) == 3 }, 5*time.Second, 10*time.Millisecond)
	}
	nw.Isolate(addrC)
	require.Eventually(t, func() bool { return states(a)["c"] == "dead" && states(c)["a"] == "dead" && states(c)["b"] == "dead" }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(2 * time.Second) // long enough that memberlist stops gossiping to the dead
	nw.Heal(addrC)
	all := map[string]string{"a": "alive", "b": "alive", "c": "alive"}
	for _, m := range []*cluster.Membership{a, b, c} {
		require.Eventually(t, func() bool { return equal(states(m), all) }, 10*time.Second, 10*time.Millisecond, "one cluster again")
	}
}

func TestMetaTooLarge(t *testing.T) {
	_, err := cluster.Start(t.Context(), &cluster.Config{Name: "x", Bind: "127.0.0.1:0", Meta: cluster.Meta{Queues: []string{strings.Repeat("q", 600)}}})
	require.ErrorIs(t, err, cluster.ErrMetaTooLarge)
}

// ctx bounds the first join: a seed that accepts the connection and never
// answers keeps memberlist's join waiting, and Start gives up when ctx
// ends, with ctx's error, leaving nothing running (goleak checks).
func TestStartHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := cluster.Start(ctx, &cluster.Config{Name: "x", Bind: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	require.ErrorIs(t, err, context.Canceled)

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		silent.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = cluster.Start(ctx, &cluster.Config{Name: "y", Bind: "127.0.0.1:0", Join: []string{silent.Addr().String()},
		Logger: slog.New(slog.DiscardHandler)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "cluster: join")
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Keys and labels keep clusters apart: a member with another label or
// another key never joins; one with the same key does.
func TestEncryptionAndLabel(t *testing.T) {
	key := []byte("0123456789abcdef")
	other := []byte("fedcba9876543210")
	mk := func(name, label string, k []byte, join []string) (*cluster.Membership, string) {
		m, err := cluster.Start(t.Context(), &cluster.Config{Name: name, Bind: "127.0.0.1:0", Join: join, Label: label, SecretKey: k,
			RejoinInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(m.Shutdown)
		return m, m.Addr()
	}
	a, seed := mk("a", "prod", key, nil)
	b, _ := mk("b", "prod", key, []string{seed})
	c, _ := mk("c", "staging", key, []string{seed})
	d, _ := mk("d", "prod", other, []string{seed})
	require.Eventually(t, func() bool { return len(states(a)) == 2 && len(states(b)) == 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, map[string]string{"a": "alive", "b": "alive"}, states(a))
	require.Len(t, states(c), 1, "another label never joins")
	require.Len(t, states(d), 1, "another key never joins")
}

// Members of another store are foreign (and so ignored by placement, which
// takes alive members only); a member that does not advertise a store, as
// earlier versions do, is taken as the same store.
func TestMembershipForeignStore(t *testing.T) {
	nw := clustertest.NewNetwork()
	a, seed := start(t, nw, "a", nil, cluster.Meta{Store: "s1", Queues: []string{"q"}})
	b, _ := start(t, nw, "b", []string{seed}, cluster.Meta{Store: "s1", Queues: []string{"q"}})
	c, _ := start(t, nw, "c", []string{seed}, cluster.Meta{Store: "s2", Queues: []string{"q"}})
	d, _ := start(t, nw, "d", []string{seed}, cluster.Meta{Queues: []string{"q"}})
	require.Eventually(t, func() bool {
		return equal(states(a), map[string]string{"a": "alive", "b": "alive", "c": "foreign", "d": "alive"})
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return equal(states(c), map[string]string{"a": "foreign", "b": "foreign", "c": "alive", "d": "alive"})
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return len(states(b)) == 4 && len(states(d)) == 4 }, 5*time.Second, 10*time.Millisecond)

	// A store learnt later (the node reached Redis after it joined).
	require.NoError(t, d.SetMeta(context.Background(), func(m *cluster.Meta) { m.Store = "s2" }))
	require.Eventually(t, func() bool {
		return states(a)["d"] == "foreign" && states(d)["a"] == "foreign" && states(d)["c"] == "alive"
	},
		5*time.Second, 10*time.Millisecond)
}
