package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/internal/clock"
)

// Member states.
const (
	StateAlive    = "alive"
	StateDraining = "draining"
	StateDead     = "dead"
	// StateForeign members gossip with this node but use another store
	// (Meta.Store differs): they are ignored for placement, as the shards
	// they would take are served in their store, not in this one.
	StateForeign = "foreign"
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
	// Store is the identity of the node's store (persistence.NodeStore's
	// StoreID);
	// empty while it is not known yet, or from a version that did not
	// advertise it, which is taken as the same store.
	Store string `json:"s,omitempty"`
}

// foreign reports whether a member advertising other belongs to another
// store than one advertising self.
func foreign(self, other Meta) bool {
	return self.Store != "" && other.Store != "" && self.Store != other.Store
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

// Membership is this node's membership in the cluster.
type Membership struct {
	cfg     Config
	log     *slog.Logger
	ml      *memberlist.Memberlist
	changes chan struct{}      // signalled (non-blocking) on every change; read by the Service
	cancel  context.CancelFunc // called by Shutdown: ends the re-join loop and its lookups
	wg      sync.WaitGroup     // the re-join loop
	once    sync.Once          // Shutdown runs once

	// mu guards the fields below. memberlist's event callbacks take it
	// while memberlist holds its node lock: never call memberlist with it
	// held (LOCKS.md).
	mu        sync.Mutex
	meta      Meta
	members   map[string]Member // live members, copied from memberlist's events
	localAddr string            // this node's gossip address
	dead      map[string]Member // members that died, until DeadRetention
	foreign   map[string]string // member -> store, of foreign members already logged
}

// Start creates the local member, joins the seeds that answer and starts
// the re-join loop. A seed that does not answer yet is retried later: a
// lone first node is a cluster of one. ctx bounds the first join: when it
// ends before the seeds have answered, Start stops gossip and returns an
// error wrapping ctx.Err().
func Start(ctx context.Context, cfg *Config) (*Membership, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster: start: %w", err)
	}
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
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	for _, s := range c.Join {
		if strings.HasPrefix(s, SRVPrefix) {
			if err := CheckSeed(s); err != nil {
				return nil, fmt.Errorf("cluster: join: %w", err)
			}
		}
	}
	if c.Name == "" {
		return nil, errors.New("cluster: a node name is required")
	}
	m := &Membership{
		cfg: c, log: c.Logger.With("component", "cluster"), meta: c.Meta,
		changes: make(chan struct{}, 1), cancel: func() {},
		members: map[string]Member{}, dead: map[string]Member{}, foreign: map[string]string{},
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
	if err := m.firstJoin(ctx); err != nil {
		return nil, err
	}
	if len(c.Join) > 0 {
		loop, cancel := context.WithCancel(context.Background())
		m.cancel = cancel
		m.wg.Add(1)
		go m.rejoin(loop)
	}
	m.log.Info("gossip started", "bind", m.Addr(), "join", c.Join, "encrypted", len(c.SecretKey) > 0, "label", c.Label)
	return m, nil
}

// firstJoin looks the seeds up and joins what they name, once; a seed
// that resolves to nothing or does not answer is left to the re-join loop.
// memberlist's Join takes no context, so it runs in a goroutine: when ctx
// ends first, firstJoin stops gossip, waits for the join to return (each
// seed it still tries is bounded by tcpTimeout) and returns an error
// wrapping ctx.Err().
func (m *Membership) firstJoin(ctx context.Context) error {
	seeds := m.cfg.Join
	if len(seeds) == 0 {
		return nil
	}
	addrs, err := m.missingSeeds(ctx)
	if ctx.Err() == nil && len(addrs) == 0 {
		m.log.Info("the seeds name no other node yet; looking them up again", "join", seeds, "err", err)
		return nil
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	if ctx.Err() != nil {
		done <- result{}
	} else {
		go func() {
			n, err := m.ml.Join(addrs)
			done <- result{n, err}
		}()
	}
	select {
	case r := <-done:
		if ctx.Err() == nil {
			if r.n == 0 {
				m.log.Info("no seed answered yet; retrying", "join", seeds, "addrs", addrs, "err", r.err)
			}
			return nil
		}
	case <-ctx.Done():
		<-done
	}
	if err := m.ml.Shutdown(); err != nil {
		m.log.Warn("gossip shutdown", "err", err)
	}
	return fmt.Errorf("cluster: join %v: %w", seeds, ctx.Err())
}

// Addr returns the gossip address this node advertises.
func (m *Membership) Addr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.localAddr
}

// Members returns the members as this node sees them, itself included,
// sorted by name; members that died recently are included as dead.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	out := make([]Member, 0, len(m.members)+len(m.dead)+1)
	self := false
	var newlyForeign []Member
	for name, mem := range m.members {
		if name == m.cfg.Name {
			mem.Meta, self = m.meta, true
		}
		mem.State = StateAlive
		switch {
		case name != m.cfg.Name && foreign(m.meta, mem.Meta):
			mem.State = StateForeign
			if m.foreign[name] != mem.Meta.Store {
				m.foreign[name] = mem.Meta.Store
				newlyForeign = append(newlyForeign, mem)
			}
		case mem.Meta.Draining:
			mem.State = StateDraining
		}
		out = append(out, mem)
	}
	store := m.meta.Store
	if !self {
		st := StateAlive
		if m.meta.Draining {
			st = StateDraining
		}
		out = append(out, Member{Name: m.cfg.Name, Addr: m.localAddr, State: st, Meta: m.meta})
	}
	for name, d := range m.dead {
		if clock.Since(m.cfg.Clock, d.Since) > DeadRetention {
			delete(m.dead, name)
			continue
		}
		out = append(out, d)
	}
	m.mu.Unlock()
	for _, f := range newlyForeign {
		m.log.Warn("a member of another store joined the gossip; it is ignored for placement (check its redis and redis_prefix, and use gossip_key or cluster_label to keep clusters apart)",
			"member", f.Name, "addr", f.Addr, "its_store", f.Meta.Store, "store", store)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SetMeta changes this node's metadata and broadcasts it, waiting until ctx
// ends for the broadcast to go out. The change applies locally at once (in
// Members and to this node's placement) even when the broadcast times out.
// It must not be called with a lock held that memberlist's callbacks take
// (LOCKS.md).
func (m *Membership) SetMeta(ctx context.Context, update func(*Meta)) error {
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
	timeout, err := timeoutOf(ctx)
	if err == nil {
		err = m.ml.UpdateNode(timeout)
	}
	if err != nil {
		return fmt.Errorf("cluster: broadcast metadata: %w", err)
	}
	return nil
}

// timeoutOf turns ctx into memberlist's timeout argument, at the one place
// where memberlist is called with one: the time left until ctx's deadline,
// or broadcastTimeout when it has none (memberlist cannot be cancelled, and
// 0 would wait for ever).
func timeoutOf(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond), nil
	}
	return broadcastTimeout, nil
}

// Leave announces a graceful leave, waiting until ctx ends for the
// announcement to go out, and stops gossip. Call SetMeta with Draining
// first, and drain, so that the others take the shards over without
// waiting for a failure detection.
func (m *Membership) Leave(ctx context.Context) error {
	timeout, err := timeoutOf(ctx)
	if err == nil {
		err = m.ml.Leave(timeout)
	}
	m.Shutdown()
	if err != nil {
		return fmt.Errorf("cluster: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip at once (others notice the node as failed).
func (m *Membership) Shutdown() {
	m.once.Do(func() {
		m.cancel()
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

func (m *Membership) copyMember(n *memberlist.Node) Member {
	return Member{Name: n.Name, Addr: n.Address(), Meta: decodeMeta(n.Meta), Since: m.cfg.Clock.Now()}
}

func (e *events) NotifyJoin(n *memberlist.Node) {
	m := (*Membership)(e)
	mem := m.copyMember(n)
	m.mu.Lock()
	m.members[mem.Name] = mem
	delete(m.dead, mem.Name)
	m.mu.Unlock()
	m.signal()
}

func (e *events) NotifyUpdate(n *memberlist.Node) {
	m := (*Membership)(e)
	mem := m.copyMember(n)
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
	mem := m.copyMember(n)
	m.mu.Lock()
	delete(m.members, mem.Name)
	delete(m.foreign, mem.Name)
	if !mem.Meta.Draining { // a member that drained first left gracefully
		mem.State = StateDead
		m.dead[mem.Name] = mem
	}
	m.mu.Unlock()
	m.signal()
}
