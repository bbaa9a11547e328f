package orderly

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Unserved shards (docs/contract.md §2.4). The placement gives every shard
// of a queue to one member, but a member that the others count may not
// serve its share (views of the membership that disagree for a while, a
// member with other settings). So every node of a cluster also reads the
// lease holders of its queues now and then, remembers since when each
// shard has been free, and serves one that stayed free longer than
// lease_ttl (plus a random delay, so that not every node tries at once; the
// lease decides anyway) beside its share: it adopts it. It gives an adopted
// shard back when its placement changes (the shard then goes where the new
// placement says, or is adopted again), when another node holds its lease,
// when it has served it for adoptHold (so that the member the placement gives
// it to takes it back once it can: it retries while another node holds the
// lease, and nothing else would ever tell the adopter; if that member still
// does not serve it, the shard is adopted again within lease_ttl and a
// second), and when it stops serving (quiet, stop). Ready reports a shard of the
// node's queues that stayed free longer than orphanBound.

// orphanJitter is the most random delay added to lease_ttl before a node
// adopts a free shard.
const orphanJitter = 500 * time.Millisecond

// orphanSlack is how much longer than lease_ttl a shard of the node's
// queues may stay free before Ready reports it: the contract's bound
// (docs/contract.md §2.4).
const orphanSlack = 2 * time.Second

// adoptHold is how long a node serves an adopted shard before it gives it
// back to the placement: ten lease lifetimes, at least 10 s.
func (n *Node) adoptHold() time.Duration { return max(10*n.cfg.LeaseTTL, 10*time.Second) }

// orphanInterval is how often a node reads the lease holders of its queues:
// one pipeline per queue.
func (n *Node) orphanInterval() time.Duration {
	return min(n.cfg.LeaseTTL/3, 500*time.Millisecond)
}

// orphanBound is how long a shard may stay free before Ready reports it.
func (n *Node) orphanBound() time.Duration { return n.cfg.LeaseTTL + orphanSlack }

// freeShard is what the sweep knows of a shard nobody holds.
type freeShard struct {
	since time.Time // first seen free
	adopt time.Time // since + lease_ttl + a random delay: adopt it from then
}

// sweepOrphans reads the lease holders every orphanInterval until ctx ends;
// the bootstrap goroutine starts it in a cluster.
func (n *Node) sweepOrphans(ctx context.Context) {
	defer n.boot.Done()
	d := n.orphanInterval()
	for {
		if clock.Sleep(ctx, n.clock, d+rand.N(d/4+1)) != nil {
			return
		}
		n.sweepOnce(ctx)
	}
}

// sweepOnce reads the lease holders of the node's queues and adopts, or
// gives back, shards.
func (n *Node) sweepOnce(ctx context.Context) {
	owners := map[persistence.ShardRef]string{}
	for _, w := range n.workers {
		cctx, cancel := context.WithTimeout(ctx, max(n.cfg.LeaseTTL/2, time.Second))
		list, err := n.store.ShardOwners(cctx, w.Queue)
		cancel()
		if err != nil {
			n.log.Debug("cannot read the shard owners; no orphan sweep this time", "queue", w.Queue, "err", err)
			return
		}
		for _, o := range list {
			owners[persistence.ShardRef{Queue: w.Queue, Shard: o.Shard}] = o.Owner
		}
	}
	healthy := n.healthy()
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.free == nil {
		n.free = map[persistence.ShardRef]freeShard{}
	}
	for ref, owner := range owners {
		if owner != "" {
			delete(n.free, ref)
			continue
		}
		if _, ok := n.free[ref]; !ok {
			n.free[ref] = freeShard{since: now, adopt: now.Add(n.cfg.LeaseTTL + rand.N(orphanJitter))}
		}
	}
	changed := false
	for ref, since := range n.adopted {
		switch o := owners[ref]; {
		case o != "" && o != n.cfg.Name:
			// Another node holds it: this node's actor only waits.
			n.log.Info("giving back an adopted shard: another node serves it", "queue", ref.Queue, "shard", ref.Shard, "holder", o)
			delete(n.adopted, ref)
			changed = true
		case now.Sub(since) >= n.adoptHold():
			n.log.Info("giving back an adopted shard to the placement", "queue", ref.Queue, "shard", ref.Shard, "served_for", now.Sub(since).Round(time.Second))
			delete(n.adopted, ref)
			// Not adopted again by this node before lease_ttl and the jitter
			// from now: the placement's member, retrying, comes first.
			n.free[ref] = freeShard{since: now, adopt: now.Add(n.cfg.LeaseTTL + rand.N(orphanJitter))}
			changed = true
		}
	}
	if n.state == stateRunning && !n.quiet && n.ready && n.placed && healthy {
		for ref, f := range n.free {
			if _, ok := n.adopted[ref]; ok || n.never[ref] || slices.Contains(n.desired, ref) || now.Before(f.adopt) {
				continue
			}
			if n.adopted == nil {
				n.adopted = map[persistence.ShardRef]time.Time{}
			}
			n.adopted[ref] = now
			changed = true
			n.log.Warn("serving a shard no node serves (another member's view disagrees, or it is misconfigured)",
				"queue", ref.Queue, "shard", ref.Shard, "free_for", now.Sub(f.since).Round(time.Millisecond))
		}
	}
	if changed {
		n.assignLocked(n.desired)
	}
}

// healthy reports whether the node advertises itself as able to serve:
// not draining nor unhealthy (cannot reach the store).
func (n *Node) healthy() bool {
	n.mu.Lock()
	m := n.members
	n.mu.Unlock()
	if m == nil {
		return true
	}
	for _, c := range m.Members() {
		if c.Name == n.cfg.Name {
			return !c.Meta.Unhealthy && !c.Meta.Draining
		}
	}
	return false
}

// unservedLocked returns an error naming the shards of the node's queues
// that have been free longer than orphanBound at the last sweep, or nil.
// Called with n.mu held.
func (n *Node) unservedLocked(now time.Time) error {
	var late []string
	for ref, f := range n.free {
		if now.Sub(f.since) > n.orphanBound() {
			late = append(late, fmt.Sprintf("%s (free for %s)", ref, now.Sub(f.since).Round(100*time.Millisecond)))
		}
	}
	if len(late) == 0 {
		return nil
	}
	slices.Sort(late)
	return fmt.Errorf("%w: no node serves shard %v for longer than lease_ttl + %s", ErrNotReady, late, orphanSlack)
}

// served returns the shards the node actor should serve: refs and the
// adopted shards, sorted. Called with n.mu held.
func (n *Node) servedLocked(refs []persistence.ShardRef) []persistence.ShardRef {
	if len(n.adopted) == 0 {
		return refs
	}
	out := slices.Clone(refs)
	for ref := range n.adopted {
		if !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	slices.SortFunc(out, persistence.ShardRef.Compare)
	return out
}
