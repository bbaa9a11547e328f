package cluster

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// dnsTable answers lookups from maps: hosts by name, SRV records by name
// (as host:port targets); an unknown name is not found.
type dnsTable struct {
	hosts map[string][]string
	srv   map[string][]string
}

func notFound(name string) error {
	return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (d dnsTable) LookupHost(_ context.Context, host string) ([]string, error) {
	if a := d.hosts[host]; len(a) > 0 {
		return a, nil
	}
	return nil, notFound(host)
}

func (d dnsTable) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	var out []*net.SRV
	for _, hp := range d.srv[name] {
		h, p, _ := net.SplitHostPort(hp)
		port, _ := strconv.Atoi(p)
		out = append(out, &net.SRV{Target: h + ".", Port: uint16(port)})
	}
	if len(out) == 0 {
		return "", nil, notFound(name)
	}
	return "", out, nil
}

// TestResolveSeeds: an IP seed is itself; a name stands for each of its
// addresses with the seed's port (or the bind port without one); an SRV
// seed for each target's addresses with the record's port; duplicates
// go, and a name that resolves to nothing adds nothing but an error.
func TestResolveSeeds(t *testing.T) {
	dns := dnsTable{
		hosts: map[string][]string{
			"orderly.ns.svc": {"10.0.0.2", "10.0.0.3", "fd00::4"},
			"pod-a.orderly":  {"10.0.0.5"},
		},
		srv: map[string][]string{
			"_gossip._tcp.orderly": {"pod-a.orderly:7001", "10.0.0.6:7002", "10.0.0.1:7946"},
		},
	}
	got, err := resolveSeeds(t.Context(), dns, []string{
		"10.0.0.1:7946", "orderly.ns.svc:7946", "dns+srv:_gossip._tcp.orderly", "pod-a.orderly", "later.ns.svc:7946",
	}, 7000)
	require.Equal(t, []string{
		"10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.3:7946", "[fd00::4]:7946",
		"10.0.0.5:7001", "10.0.0.6:7002", "10.0.0.5:7000",
	}, got)
	require.ErrorContains(t, err, "addresses of later.ns.svc")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	require.True(t, dnsErr.IsNotFound)

	got, err = resolveSeeds(t.Context(), dns, []string{"dns+srv:_gossip._tcp.nothing"}, 7000)
	require.Empty(t, got)
	require.ErrorContains(t, err, "SRV records of _gossip._tcp.nothing")
}

func TestCheckSeed(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:7946", "orderly.ns.svc.cluster.local:7946", "[::1]:7946", "dns+srv:_gossip._tcp.orderly.ns.svc"} {
		require.NoError(t, CheckSeed(ok), ok)
	}
	for _, bad := range []string{"dns+srv:", "dns+srv:a b", "dns+srv:host:7946", "orderly", ":7946", "host:0", "host:x"} {
		require.Error(t, CheckSeed(bad), bad)
	}
}
