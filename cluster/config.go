package cluster

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/internal/logbridge"
)

// Defaults of Config. Failure detection is tuned for speed: memberlist's LAN
// profile notices a SIGKILL in 5 to 6 s, this one in 0.65 to 0.85 s
// (measured on loopback with 3 nodes), about 1 s on a LAN.
const (
	DefaultBind = "127.0.0.1:7946"
	// DefaultProbeInterval: a member is probed every 200 ms [LAN: 1 s].
	DefaultProbeInterval = 200 * time.Millisecond
	// DefaultProbeTimeout: a probe unanswered after 100 ms fails, then
	// goes through indirect probes [LAN: 500 ms; a LAN round trip is well
	// under 1 ms].
	DefaultProbeTimeout = 100 * time.Millisecond
	// DefaultSuspicionMult: a suspect is declared dead after
	// 2 * max(1, log10(N)) probe intervals unless it refutes [LAN: 4].
	DefaultSuspicionMult = 2
	// DefaultGossipInterval: state changes spread every 50 ms [LAN: 200 ms].
	DefaultGossipInterval = 50 * time.Millisecond
	// DefaultPushPullInterval: a full state sync with one member every 5 s
	// [LAN: 30 s], which also repairs views after missed gossip.
	DefaultPushPullInterval = 5 * time.Second
	// DefaultRejoinInterval is how often a node that has peers looks its
	// seeds up again and re-joins the addresses it does not see: memberlist
	// does not reliably merge by itself after a partition heals.
	DefaultRejoinInterval = 10 * time.Second
	// DeadRetention is how long a member that died stays in Members, as
	// dead, for operators to see.
	DeadRetention = 10 * time.Minute
	// MaxMetaBytes is memberlist's limit on a node's metadata.
	MaxMetaBytes = memberlist.MetaMaxSize
)

// Overrides of memberlist's LAN profile that Config does not expose.
const (
	// suspicionMaxTimeoutMult caps the suspicion timeout at 3 times its
	// minimum while confirmations are missing [LAN: 6].
	suspicionMaxTimeoutMult = 3
	// tcpTimeout bounds a push/pull or a TCP probe [LAN: 10 s]: with
	// 200 ms probes a 10 s stream would stall detection.
	tcpTimeout = 500 * time.Millisecond
	// gossipToTheDeadTime is how long a dead member still gets gossip
	// [LAN: 30 s]; with fast detection a short window suffices, and the
	// re-join loop heals partitions anyway.
	gossipToTheDeadTime = 5 * time.Second
	// broadcastTimeout bounds memberlist's wait for a broadcast (a metadata
	// update or a leave) when the caller's context has no deadline.
	broadcastTimeout = time.Second
)

// Config configures a Membership. The zero value of each field means its
// default.
type Config struct {
	// Name is the node's unique name in the cluster.
	Name string
	// Bind is the gossip address (UDP and TCP), host:port [DefaultBind];
	// port 0 picks a free one.
	Bind string
	// Advertise is the address others reach this node at, when it differs
	// from Bind (NAT, containers).
	Advertise string
	// Join are seeds: host:port addresses of other members, a host that is
	// a DNS name standing for every address it resolves to, or SRVPrefix
	// and a DNS name of SRV records. Names are looked up again at every
	// re-join, so members that appear in DNS later are joined (see
	// DefaultAloneRejoinInterval).
	Join []string
	// Resolver looks the seeds' names up [net.DefaultResolver].
	Resolver Resolver
	// RejoinInterval [DefaultRejoinInterval].
	RejoinInterval time.Duration
	// Failure detection [DefaultProbeInterval, DefaultProbeTimeout,
	// DefaultSuspicionMult].
	ProbeInterval, ProbeTimeout time.Duration
	SuspicionMult               int
	// SecretKey (16, 24 or 32 bytes) encrypts gossip with AES; nil sends it
	// in the clear. All members must share it.
	SecretKey []byte
	// Label is put on every gossip packet; members with another label are
	// ignored, so that two clusters on one network never merge.
	Label string
	// Meta is the node's initial metadata.
	Meta Meta
	// Transport replaces memberlist's network transport (fault injection
	// in tests).
	Transport memberlist.Transport
	// Clock dates membership changes and paces the re-join loop
	// [clock.Real()]; memberlist's own timers run on the system clock.
	Clock  clock.Clock
	Logger *slog.Logger
}

// memberlistConfig returns memberlist's LAN profile with Orderly's
// overrides, one line each.
func (m *Membership) memberlistConfig() (*memberlist.Config, error) {
	c := m.cfg
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.Name
	host, port, err := splitHostPort(c.Bind)
	if err != nil {
		return nil, fmt.Errorf("cluster: bind %q: %w", c.Bind, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	if c.Advertise != "" {
		ahost, aport, err := splitHostPort(c.Advertise)
		if err != nil {
			return nil, fmt.Errorf("cluster: advertise %q: %w", c.Advertise, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ahost, aport
	}
	mc.ProbeInterval = cmp.Or(c.ProbeInterval, DefaultProbeInterval)         // LAN: 1 s
	mc.ProbeTimeout = cmp.Or(c.ProbeTimeout, DefaultProbeTimeout)            // LAN: 500 ms
	mc.SuspicionMult = cmp.Or(max(c.SuspicionMult, 0), DefaultSuspicionMult) // LAN: 4
	mc.SuspicionMaxTimeoutMult = suspicionMaxTimeoutMult                     // LAN: 6
	mc.GossipInterval = DefaultGossipInterval                                // LAN: 200 ms
	mc.PushPullInterval = DefaultPushPullInterval                            // LAN: 30 s
	mc.TCPTimeout = tcpTimeout                                               // LAN: 10 s
	mc.GossipToTheDeadTime = gossipToTheDeadTime                             // LAN: 30 s
	mc.SecretKey = c.SecretKey
	mc.Label = c.Label
	mc.Delegate = (*delegate)(m)
	mc.Events = (*events)(m)
	mc.Logger = logbridge.Memberlist(m.log)
	if c.Transport != nil {
		mc.Transport = c.Transport
	}
	return mc, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}
