// Package clustertest helps cluster tests: a gossip network that can cut
// nodes off (a memberlist transport wrapper that drops their packets and
// refuses their connections), for partition tests run in one process.
package clustertest

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/internal/logbridge"
)

// Network is a set of gossip transports on 127.0.0.1 whose traffic can be
// cut per node. Every member of a test cluster must use it, so that traffic
// is dropped on both ends.
type Network struct {
	mu  sync.Mutex // guards cut
	cut map[string]bool
}

// NewNetwork returns a network where every node reaches every other.
func NewNetwork() *Network { return &Network{cut: map[string]bool{}} }

// Transport returns a transport bound to a free port of 127.0.0.1 and its
// address. memberlist shuts it down with the member.
func (n *Network) Transport(t testing.TB) (memberlist.Transport, string) {
	t.Helper()
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"},
		BindPort:  0,
		Logger:    logbridge.Memberlist(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatalf("clustertest: transport: %v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(nt.GetAutoBindPort()))
	return &transport{NetTransport: nt, net: n, self: addr}, addr
}

// Isolate cuts addr off from every other node: its packets and connections
// are dropped both ways, while the node itself keeps running (and reaching
// Redis).
func (n *Network) Isolate(addr string) {
	n.mu.Lock()
	n.cut[addr] = true
	n.mu.Unlock()
}

// Heal reconnects addr.
func (n *Network) Heal(addr string) {
	n.mu.Lock()
	delete(n.cut, addr)
	n.mu.Unlock()
}

func (n *Network) blocked(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return a != b && (n.cut[a] || n.cut[b])
}

// transport drops what one end of a cut link sends.
type transport struct {
	*memberlist.NetTransport
	net  *Network
	self string
}

var errPartitioned = fmt.Errorf("clustertest: partitioned")

func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.net.blocked(t.self, addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.net.blocked(t.self, a.Addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.net.blocked(t.self, addr) {
		return nil, errPartitioned
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.net.blocked(t.self, a.Addr) {
		return nil, errPartitioned
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}
