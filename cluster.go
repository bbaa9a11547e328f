package orderly

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/remote"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
)

// remoteQueueSize bounds protoactor remote's per-peer queues (its default
// preallocates 16 MiB per peer).
const remoteQueueSize = 4096

// placementTick recomputes the placement even without membership events,
// in case one was missed.
const placementTick = time.Second

// startNetwork starts protoactor remote (ActorAddr) and the membership
// (Cluster). Called by Start with n.mu held.
func (n *Node) startNetwork() error {
	if n.cfg.ActorAddr != "" {
		r, err := startRemote(n, n.cfg.ActorAddr)
		if err != nil {
			return err
		}
		n.remote = r
	}
	if n.cfg.Cluster == nil {
		return nil
	}
	c := *n.cfg.Cluster
	c.Name = n.cfg.Name
	c.Meta.Queues = n.Queues()
	c.Meta.Version = Version
	if n.remote != nil {
		c.Meta.Actor = n.sys.Address()
	}
	if c.Logger == nil {
		c.Logger = n.log
	}
	m, err := cluster.Start(&c)
	if err != nil {
		if n.remote != nil {
			n.remote.Shutdown(false)
		}
		return fmt.Errorf("orderly: %w", err)
	}
	n.members = m
	return nil
}

// startRemote serves the node's actors at addr. protoactor's remote panics
// when it cannot listen, so the address is checked first.
func startRemote(n *Node, addr string) (r *remote.Remote, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor address %q: bad port", addr)
	}
	if port == 0 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("orderly: actor address %s: %w", addr, err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	} else if ln, err := net.Listen("tcp", addr); err != nil {
		return nil, fmt.Errorf("orderly: actor address %s: %w", addr, err)
	} else {
		ln.Close()
	}
	defer func() {
		if v := recover(); v != nil {
			r, err = nil, fmt.Errorf("orderly: start actor remote on %s: %v", addr, v)
		}
	}()
	r = remote.NewRemote(n.sys, remote.Configure(host, port,
		remote.WithEndpointWriterQueueSize(remoteQueueSize), remote.WithEndpointManagerQueueSize(remoteQueueSize)))
	r.Start()
	n.log.Info("actor remote listening", "actor_addr", n.sys.Address())
	return r, nil
}

// placementLoop serves the node's share of the shards as the membership
// changes.
func (n *Node) placementLoop(ctx context.Context) {
	defer n.wg.Done()
	t := time.NewTicker(placementTick)
	defer t.Stop()
	for {
		n.place()
		select {
		case <-ctx.Done():
			return
		case <-n.members.Changes():
		case <-t.C:
		}
	}
}

// place computes the node's shards from the membership and assigns them
// when they changed.
func (n *Node) place() {
	queues := map[string]int{}
	for _, w := range n.workers {
		queues[w.Queue] = w.Shards
	}
	members := n.members.Members()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state != stateRunning {
		return
	}
	var refs []persistence.ShardRef
	if !n.quiet {
		refs = cluster.Assignment(n.cfg.Name, queues, members)
	}
	if n.placed && slices.Equal(refs, n.last) {
		return
	}
	alive := 0
	for _, m := range members {
		if m.State == cluster.StateAlive {
			alive++
		}
	}
	n.log.Info("placement", "shards", len(refs), "members_alive", alive, "members", len(members))
	n.last, n.placed = refs, true
	n.assign(refs)
}

// healthLoop advertises the node as unhealthy while it cannot reach the
// store (for more than half a lease), so that the others take its shards
// over when its leases expire; and healthy again once it has reached it for
// a whole lease.
func (n *Node) healthLoop(ctx context.Context) {
	defer n.wg.Done()
	ttl := n.cfg.LeaseTTL
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	var failingSince, okSince time.Time
	unhealthy := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, ttl/3)
		err := n.store.Ping(pctx)
		cancel()
		now := time.Now()
		if err != nil {
			okSince = time.Time{}
			if failingSince.IsZero() {
				failingSince = now
			}
			if !unhealthy && now.Sub(failingSince) >= ttl/2 {
				unhealthy = true
				n.log.Warn("cannot reach the store: advertising unhealthy so that other nodes take the shards over", "err", err)
				n.setUnhealthy(true)
			}
			continue
		}
		failingSince = time.Time{}
		if okSince.IsZero() {
			okSince = now
		}
		if unhealthy && now.Sub(okSince) >= ttl {
			unhealthy = false
			n.log.Info("store reachable again: serving shards again")
			n.setUnhealthy(false)
		}
	}
}

func (n *Node) setUnhealthy(v bool) {
	if err := n.members.SetMeta(func(m *cluster.Meta) { m.Unhealthy = v }); err != nil {
		n.log.Warn("cannot advertise health", "err", err)
	}
}

// Members returns the cluster's members as this node sees them; a node
// without a cluster is a member alone.
func (n *Node) Members() []cluster.Member {
	n.mu.Lock()
	m := n.members
	n.mu.Unlock()
	if m != nil {
		return m.Members()
	}
	meta := cluster.Meta{Queues: n.Queues(), Version: Version}
	if n.cfg.ActorAddr != "" && n.ActorSystem() != nil {
		meta.Actor = n.ActorSystem().Address()
	}
	return []cluster.Member{{Name: n.cfg.Name, State: cluster.StateAlive, Meta: meta}}
}

// membersMessage answers the enqueue actor's MembersRequest.
func (n *Node) membersMessage() *messages.MembersResponse {
	out := &messages.MembersResponse{Self: n.cfg.Name}
	for _, m := range n.Members() {
		out.Members = append(out.Members, &messages.Member{
			Name: m.Name, State: m.State, Http: m.Meta.HTTP, Actor: m.Meta.Actor,
			Queues: m.Meta.Queues, Version: m.Meta.Version,
		})
	}
	return out
}
