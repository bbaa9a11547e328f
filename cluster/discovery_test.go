package cluster_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/testing/clustertest"
)

// fakeDNS serves SRV records that a test changes while nodes run; a name
// without records is not found.
type fakeDNS struct {
	mu      sync.Mutex
	srv     map[string][]string // name -> host:port targets
	lookups int
}

func (d *fakeDNS) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lookups
}

func (d *fakeDNS) set(name string, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.srv == nil {
		d.srv = map[string][]string{}
	}
	d.srv[name] = addrs
}

func (d *fakeDNS) LookupHost(_ context.Context, host string) ([]string, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (d *fakeDNS) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	var out []*net.SRV
	for _, hp := range d.srv[name] {
		h, p, _ := net.SplitHostPort(hp)
		port, _ := strconv.Atoi(p)
		out = append(out, &net.SRV{Target: h, Port: uint16(port)})
	}
	if len(out) == 0 {
		return "", nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	return "", out, nil
}

func startDNS(t *testing.T, tr *clustertest.Network, name string, join []string, dns cluster.Resolver, rejoin time.Duration) (*cluster.Membership, string) {
	t.Helper()
	transport, addr := tr.Transport(t)
	m, err := cluster.Start(t.Context(), &cluster.Config{
		Name: name, Bind: addr, Join: join, Resolver: dns, Transport: transport,
		RejoinInterval: rejoin, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(m.Shutdown)
	return m, addr
}

// TestDNSSeedFormsClusterWhenPeersAppear: three nodes whose only seed is
// one SRV name start while it names nobody, each alone; once the name
// lists them all they form one cluster. The re-join interval is an hour:
// they meet because a lone node looks its seeds up again within
// DefaultAloneRejoinInterval.
func TestDNSSeedFormsClusterWhenPeersAppear(t *testing.T) {
	nw := clustertest.NewNetwork()
	dns := &fakeDNS{}
	seed := []string{cluster.SRVPrefix + "_gossip._tcp.orderly.test"}
	var ms []*cluster.Membership
	var addrs []string
	for _, name := range []string{"a", "b", "c"} {
		m, addr := startDNS(t, nw, name, seed, dns, time.Hour)
		ms, addrs = append(ms, m), append(addrs, addr)
	}
	for _, m := range ms {
		require.Len(t, states(m), 1, "alone while the name resolves to nothing")
	}
	dns.set("_gossip._tcp.orderly.test", addrs...)
	all := map[string]string{"a": "alive", "b": "alive", "c": "alive"}
	for _, m := range ms {
		require.Eventually(t, func() bool { return equal(states(m), all) }, 15*time.Second, 10*time.Millisecond, "one cluster")
	}
}

// TestDNSSeedJoinsNewAddresses: nodes that already have peers keep looking
// their seed up (every RejoinInterval) and join an address that appears
// later, even one of a node that has no seed of its own.
func TestDNSSeedJoinsNewAddresses(t *testing.T) {
	nw := clustertest.NewNetwork()
	dns := &fakeDNS{}
	seed := []string{cluster.SRVPrefix + "orderly.test"}
	a, addrA := startDNS(t, nw, "a", seed, dns, 200*time.Millisecond)
	b, addrB := startDNS(t, nw, "b", seed, dns, 200*time.Millisecond)
	dns.set("orderly.test", addrA, addrB)
	for _, m := range []*cluster.Membership{a, b} {
		require.Eventually(t, func() bool { return len(states(m)) == 2 }, 15*time.Second, 10*time.Millisecond)
	}
	c, addrC := startDNS(t, nw, "c", nil, dns, 200*time.Millisecond)
	dns.set("orderly.test", addrA, addrB, addrC)
	all := map[string]string{"a": "alive", "b": "alive", "c": "alive"}
	for _, m := range []*cluster.Membership{a, b, c} {
		require.Eventually(t, func() bool { return equal(states(m), all) }, 15*time.Second, 10*time.Millisecond, "c joined through the name")
	}
}

// blockingDNS answers no lookup until its context ends.
type blockingDNS struct{}

func (blockingDNS) LookupHost(ctx context.Context, _ string) ([]string, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (blockingDNS) LookupSRV(ctx context.Context, _, _, _ string) (string, []*net.SRV, error) {
	<-ctx.Done()
	return "", nil, ctx.Err()
}

// TestDNSSeedLookupHonoursContext: a lookup that does not answer is
// abandoned when Start's context ends (Start fails with its error).
func TestDNSSeedLookupHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := cluster.Start(ctx, &cluster.Config{Name: "x", Bind: "127.0.0.1:0", Join: []string{"dns+srv:orderly.test"},
		Resolver: blockingDNS{}, Logger: slog.New(slog.DiscardHandler)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "cluster: join")

	_, err = cluster.Start(t.Context(), &cluster.Config{Name: "y", Bind: "127.0.0.1:0", Join: []string{"dns+srv:"},
		Logger: slog.New(slog.DiscardHandler)})
	require.ErrorContains(t, err, "must be followed by a DNS name")
}

// TestRejoinPacing, on a simulated clock: a lone node looks its seed up
// again after 100 ms, doubling up to DefaultAloneRejoinInterval and staying
// there, however long it waits; once it has joined a peer the seed names,
// it looks again every RejoinInterval.
func TestRejoinPacing(t *testing.T) {
	nw := clustertest.NewNetwork()
	dns := &fakeDNS{}
	_, addrB := startDNS(t, nw, "b", nil, dns, time.Hour)
	sim := clock.NewSimulated(time.Unix(1e9, 0))
	tr, addrA := nw.Transport(t)
	a, err := cluster.Start(t.Context(), &cluster.Config{
		Name: "a", Bind: addrA, Join: []string{"dns+srv:orderly.test"}, Resolver: dns, Transport: tr, Clock: sim,
		RejoinInterval: time.Hour, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(a.Shutdown)
	nextWait := func() time.Duration {
		t.Helper()
		require.Eventually(t, func() bool { return sim.Pending() == 1 }, 10*time.Second, time.Millisecond, "the loop waits")
		at, _ := sim.Next()
		return at.Sub(sim.Now())
	}
	advance := func(d time.Duration) {
		t.Helper()
		n := dns.count()
		sim.Advance(d)
		require.Eventually(t, func() bool { return dns.count() > n }, 10*time.Second, time.Millisecond, "looked up again")
	}
	var waits []time.Duration
	for range 8 {
		w := nextWait()
		waits = append(waits, w)
		advance(w)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2 * time.Second, 2 * time.Second, 2 * time.Second}, waits)

	dns.set("orderly.test", addrA, addrB)
	advance(nextWait())
	require.Eventually(t, func() bool { return len(states(a)) == 2 }, 10*time.Second, time.Millisecond)
	require.Equal(t, time.Hour, nextWait(), "with a peer, every RejoinInterval")
}
