package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/internal/logbridge"
)

// Defaults of Config: failure detection tuned for speed (measured on
// loopback: a SIGKILL is noticed in 0.65 to 0.85 s).
const (
	DefaultBind             = "127.0.0.1:7946"
	DefaultProbeInterval    = 200 * time.Millisecond
	DefaultProbeTimeout     = 100 * time.Millisecond
	DefaultSuspicionMult    = 2
	DefaultGossipInterval   = 50 * time.Millisecond
	DefaultPushPullInterval = 5 * time.Second
	// DefaultRejoinInterval is how often a node re-joins the seeds it does
	// not see: memberlist does not reliably merge by itself after a
	// partition heals.
	DefaultRejoinInterval = 10 * time.Second
	// DeadRetention is how long a member that died stays in Members, as
	// dead, for operators to see.
	DeadRetention = 10 * time.Minute
	// MaxMetaBytes is memberlist's limit on a node's metadata.
	MaxMetaBytes = memberlist.MetaMaxSize
)

// Member states.
const (
	StateAlive    = "alive"
	StateDraining = "draining"
	StateDead     = "dead"
)

// Errors.
var (
	// ErrMetaTooLarge is returned when a node's metadata does not fit in
	// memberlist's 512 bytes (too many or too long queue names).
	ErrMetaTooLarge = errors.New("cluster: node metadata over 512 bytes")
)

// Meta is what a node advertises to the others.
type Meta struct {
	HTTP    string   `json:"h,omitempty"`
	Actor   string   `json:"a,omitempty"`
	Version string   `json:"v,omitempty"`
	Queues  []string `json:"q,omitempty"`
	// Draining is set before a graceful leave and while the node is quiet:
	// it keeps gossiping but serves no shard.
	Draining bool `json:"d,omitempty"`
	// Unhealthy is set while the node cannot reach Redis.
	Unhealthy bool `json:"u,omitempty"`
}

func (m Meta) encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMetaBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrMetaTooLarge, len(b))
	}
	return b, nil
}

func decodeMeta(b []byte) Meta {
	var m Meta
	_ = json.Unmarshal(b, &m) // a member with unreadable metadata serves nothing
	return m
}

// Member is a node of the cluster as this node sees it.
type Member struct {
	Name string
	// Addr is the gossip address.
	Addr  string
	State string
	Meta  Meta
	// Since is when the member entered its state, as seen here.
	Since time.Time
}

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
	// Join are seed addresses (host:port) of other members.
	Join []string
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
	Logger    *slog.Logger
}

// Membership is this node's membership in the cluster.
type Membership struct {
	cfg     Config
	log     *slog.Logger
	ml      *memberlist.Memberlist
	changes chan struct{} // signalled (non-blocking) on every change
	stop    chan struct{}
	wg      sync.WaitGroup // the re-join loop
	once    sync.Once

	mu        sync.Mutex // guards meta, members and dead
	meta      Meta
	members   map[string]Member // live members, copied from memberlist's events
	localAddr string
	dead      map[string]Member // members that died, until DeadRetention
}

// Start creates the local member, joins the seeds that answer and starts
// the re-join loop. A seed that does not answer yet is retried later: a
// lone first node is a cluster of one.
func Start(cfg *Config) (*Membership, error) {
	c := *cfg
	if c.Bind == "" {
		c.Bind = DefaultBind
	}
	if c.RejoinInterval == 0 {
		c.RejoinInterval = DefaultRejoinInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Name == "" {
		return nil, errors.New("cluster: a node name is required")
	}
	m := &Membership{
		cfg: c, log: c.Logger.With("component", "cluster"), meta: c.Meta,
		changes: make(chan struct{}, 1), stop: make(chan struct{}),
		members: map[string]Member{}, dead: map[string]Member{},
	}
	if _, err := m.meta.encode(); err != nil {
		return nil, err
	}
	mc, err := m.memberlistConfig()
	if err != nil {
		return nil, err
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("cluster: start gossip on %s: %w", c.Bind, err)
	}
	m.ml = ml
	m.mu.Lock()
	m.localAddr = ml.LocalNode().Address()
	m.mu.Unlock()
	joined := len(c.Join) == 0
	if !joined {
		if n, err := ml.Join(c.Join); n > 0 {
			joined = true
		} else {
			m.log.Info("no seed answered yet; retrying", "join", c.Join, "err", err)
		}
	}
	m.wg.Add(1)
	go m.rejoin(joined)
	m.log.Info("gossip started", "bind", m.Addr(), "join", c.Join, "encrypted", len(c.SecretKey) > 0, "label", c.Label)
	return m, nil
}

func (m *Membership) memberlistConfig() (*memberlist.Config, error) {
	c := m.cfg
	mc := memberlist.DefaultLocalConfig()
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
	mc.ProbeInterval = or(c.ProbeInterval, DefaultProbeInterval)
	mc.ProbeTimeout = or(c.ProbeTimeout, DefaultProbeTimeout)
	mc.SuspicionMult = max(c.SuspicionMult, 0)
	if mc.SuspicionMult == 0 {
		mc.SuspicionMult = DefaultSuspicionMult
	}
	mc.SuspicionMaxTimeoutMult = 3
	mc.GossipInterval = DefaultGossipInterval
	mc.PushPullInterval = DefaultPushPullInterval
	mc.TCPTimeout = 500 * time.Millisecond
	mc.GossipToTheDeadTime = 5 * time.Second
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

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// rejoin re-joins every seed this node does not see, until Shutdown: every
// RejoinInterval once it has reached a seed, and quickly (from 100 ms,
// doubling) until then, so that nodes started together find each other at
// once.
func (m *Membership) rejoin(joined bool) {
	defer m.wg.Done()
	wait := 100 * time.Millisecond
	if joined {
		wait = m.cfg.RejoinInterval
	}
	for {
		select {
		case <-m.stop:
			return
		case <-time.After(wait):
		}
		missing := m.missingSeeds()
		if len(missing) == 0 {
			joined, wait = true, m.cfg.RejoinInterval
			continue
		}
		n, err := m.ml.Join(missing)
		switch {
		case n > 0:
			m.log.Info("joined seeds", "seeds", missing, "contacted", n)
			joined, wait = true, m.cfg.RejoinInterval
		case joined:
			m.log.Debug("seeds still unreachable", "seeds", missing, "err", err)
		default:
			wait = min(2*wait, m.cfg.RejoinInterval)
		}
	}
}

// missingSeeds returns the seeds that match no live member's address.
func (m *Membership) missingSeeds() []string {
	live := map[string]bool{}
	m.mu.Lock()
	for _, mem := range m.members {
		live[mem.Addr] = true
	}
	m.mu.Unlock()
	var out []string
	for _, s := range m.cfg.Join {
		if live[s] {
			continue
		}
		if host, port, err := net.SplitHostPort(s); err == nil {
			if ips, err := net.LookupIP(host); err == nil && slices.ContainsFunc(ips, func(ip net.IP) bool {
				return live[net.JoinHostPort(ip.String(), port)]
			}) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// Addr returns the gossip address this node advertises.
func (m *Membership) Addr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.localAddr
}

// Name returns this node's name.
func (m *Membership) Name() string { return m.cfg.Name }

// Changes signals (coalesced) that the membership or a member's metadata
// changed.
func (m *Membership) Changes() <-chan struct{} { return m.changes }

// Members returns the members as this node sees them, itself included,
// sorted by name; members that died recently are included as dead.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	out := make([]Member, 0, len(m.members)+len(m.dead)+1)
	self := false
	for name, mem := range m.members {
		if name == m.cfg.Name {
			mem.Meta, self = m.meta, true
		}
		mem.State = StateAlive
		if mem.Meta.Draining {
			mem.State = StateDraining
		}
		out = append(out, mem)
	}
	if !self {
		st := StateAlive
		if m.meta.Draining {
			st = StateDraining
		}
		out = append(out, Member{Name: m.cfg.Name, Addr: m.localAddr, State: st, Meta: m.meta})
	}
	for name, d := range m.dead {
		if time.Since(d.Since) > DeadRetention {
			delete(m.dead, name)
			continue
		}
		out = append(out, d)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SetMeta changes this node's metadata and broadcasts it.
func (m *Membership) SetMeta(update func(*Meta)) error {
	m.mu.Lock()
	next := m.meta
	update(&next)
	_, err := next.encode()
	if err == nil {
		m.meta = next
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	m.signal()
	if err := m.ml.UpdateNode(time.Second); err != nil {
		return fmt.Errorf("cluster: broadcast metadata: %w", err)
	}
	return nil
}

// Meta returns this node's metadata.
func (m *Membership) Meta() Meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta
}

// Leave announces a graceful leave and stops gossip. Call SetMeta with
// Draining first, and drain, so that the others take the shards over
// without waiting for a failure detection.
func (m *Membership) Leave(timeout time.Duration) error {
	err := m.ml.Leave(timeout)
	m.Shutdown()
	if err != nil {
		return fmt.Errorf("cluster: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip at once (others notice the node as failed).
func (m *Membership) Shutdown() {
	m.once.Do(func() {
		close(m.stop)
		m.wg.Wait()
		if err := m.ml.Shutdown(); err != nil {
			m.log.Warn("gossip shutdown", "err", err)
		}
	})
}

func (m *Membership) signal() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// delegate provides this node's metadata to memberlist. memberlist calls it
// from its own goroutines; it only reads m.meta under m.mu.
type delegate Membership

func (d *delegate) NodeMeta(limit int) []byte {
	m := (*Membership)(d)
	m.mu.Lock()
	b, err := m.meta.encode()
	m.mu.Unlock()
	if err != nil || len(b) > limit {
		return nil
	}
	return b
}
func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

// events receives memberlist's membership events. memberlist holds its node
// lock while calling them, which makes reading the node safe here (and only
// here: memberlist changes its nodes later); they must not call back into
// memberlist nor block, so they copy the node and signal the change channel.
type events Membership

func copyMember(n *memberlist.Node) Member {
	return Member{Name: n.Name, Addr: n.Address(), Meta: decodeMeta(n.Meta), Since: time.Now()}
}

func (e *events) NotifyJoin(n *memberlist.Node) {
	m := (*Membership)(e)
	mem := copyMember(n)
	m.mu.Lock()
	m.members[mem.Name] = mem
	delete(m.dead, mem.Name)
	m.mu.Unlock()
	m.signal()
}

func (e *events) NotifyUpdate(n *memberlist.Node) {
	m := (*Membership)(e)
	mem := copyMember(n)
	m.mu.Lock()
	if old, ok := m.members[mem.Name]; ok {
		mem.Since = old.Since
	}
	m.members[mem.Name] = mem
	m.mu.Unlock()
	m.signal()
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	m := (*Membership)(e)
	mem := copyMember(n)
	m.mu.Lock()
	delete(m.members, mem.Name)
	if !mem.Meta.Draining { // a member that drained first left gracefully
		mem.State = StateDead
		m.dead[mem.Name] = mem
	}
	m.mu.Unlock()
	m.signal()
}
