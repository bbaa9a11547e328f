package cluster

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
// member with other settings). So the service also reads the lease holders
// of the node's queues now and then (the sweep), remembers since when each
// shard has been free, and has the node serve one that stayed free longer
// than lease_ttl (plus a random delay, so that not every node tries at
// once; the lease decides anyway) beside its share: it adopts it. It gives
// an adopted shard back when the node's share changes (the shard then goes
// where the new placement says, or is adopted again), when another node
// holds its lease, when the node has served it for adoptHold (so that the
// member the placement gives it to takes it back once it can: it retries
// while another node holds the lease, and nothing else would ever tell the
// adopter; if that member still does not serve it, the shard is adopted
// again within lease_ttl and a second), and when the node stops serving
// (quiet, draining, unhealthy). Unserved reports a shard of the node's
// queues that stayed free longer than lease_ttl + OrphanSlack.
//
// The sweep loop only reads the holders; the placement loop owns what the
// sweep learnt (orphans) and decides, so that the share and the adopted
// shards change in one place.

// orphanJitter is the most random delay added to lease_ttl before a node
// adopts a free shard.
const orphanJitter = 500 * time.Millisecond

// OrphanSlack is how much longer than lease_ttl a shard of the node's
// queues may stay free before Unserved reports it: the contract's bound
// (docs/contract.md §2.4).
const OrphanSlack = 2 * time.Second

// freeShard is what the sweep knows of a shard nobody holds.
type freeShard struct {
	since time.Time // first seen free
	adopt time.Time // since + lease_ttl + a random delay: adopt it from then
}

// orphans is the placement loop's view of the free and adopted shards.
type orphans struct {
	free    map[persistence.ShardRef]freeShard
	adopted map[persistence.ShardRef]time.Time // shards served beside the share, and since when
}

// adoptHold is how long a node serves an adopted shard before it gives it
// back to the placement: ten lease lifetimes, at least 10 s.
func (s *Service) adoptHold() time.Duration { return max(10*s.cfg.LeaseTTL, 10*time.Second) }

// sweepInterval is how often the sweep reads the lease holders: one
// pipeline per queue.
func (s *Service) sweepInterval() time.Duration {
	return min(s.cfg.LeaseTTL/3, 500*time.Millisecond)
}

// sweepLoop reads the lease holders of the node's queues every
// sweepInterval (with a little jitter) and hands them to the placement
// loop, until ctx ends.
func (s *Service) sweepLoop(ctx context.Context) {
	defer s.wg.Done()
	d := s.sweepInterval()
	for {
		if clock.Sleep(ctx, s.cfg.Clock, d+rand.N(d/4+1)) != nil {
			return
		}
		owners, ok := s.readOwners(ctx)
		if !ok {
			continue
		}
		select {
		case <-s.swept: // drop a result the placement loop did not take yet
		default:
		}
		s.swept <- owners
	}
}

// readOwners reads who holds each shard of the node's queues ("" for a free
// shard); false when the store did not answer.
func (s *Service) readOwners(ctx context.Context) (map[persistence.ShardRef]string, bool) {
	owners := map[persistence.ShardRef]string{}
	queues := make([]string, 0, len(s.cfg.Queues))
	for q := range s.cfg.Queues {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		cctx, cancel := context.WithTimeout(ctx, max(s.cfg.LeaseTTL/2, time.Second))
		list, err := s.cfg.Owners(cctx, q)
		cancel()
		if err != nil {
			s.log.Debug("cannot read the shard owners; no orphan sweep this time", "queue", q, "err", err)
			return nil, false
		}
		for _, o := range list {
			owners[persistence.ShardRef{Queue: q, Shard: o.Shard}] = o.Owner
		}
	}
	return owners, true
}

// sweep takes a read of the lease holders: it records the free shards and
// adopts, or gives back, shards. It reports whether the adopted shards
// changed. Called by the placement loop, with the node's current share.
func (s *Service) sweep(o *orphans, owners map[persistence.ShardRef]string, share []persistence.ShardRef) bool {
	now := s.cfg.Clock.Now()
	ttl := s.cfg.LeaseTTL
	if o.free == nil {
		o.free = map[persistence.ShardRef]freeShard{}
	}
	for ref, owner := range owners {
		if owner != "" {
			delete(o.free, ref)
			continue
		}
		if _, ok := o.free[ref]; !ok {
			o.free[ref] = freeShard{since: now, adopt: now.Add(ttl + rand.N(orphanJitter))}
		}
	}
	s.publishFree(o.free)
	changed := false
	for ref, since := range o.adopted {
		switch owner := owners[ref]; {
		case owner != "" && owner != s.cfg.Self:
			// Another node holds it: this node's actor only waits.
			s.log.Info("giving back an adopted shard: another node serves it", "queue", ref.Queue, "shard", ref.Shard, "holder", owner)
			delete(o.adopted, ref)
			changed = true
		case now.Sub(since) >= s.adoptHold():
			s.log.Info("giving back an adopted shard to the placement", "queue", ref.Queue, "shard", ref.Shard, "served_for", now.Sub(since).Round(time.Second))
			delete(o.adopted, ref)
			// Not adopted again by this node before lease_ttl and the jitter
			// from now: the placement's member, retrying, comes first.
			o.free[ref] = freeShard{since: now, adopt: now.Add(ttl + rand.N(orphanJitter))}
			changed = true
		}
	}
	if !s.serving() {
		if len(o.adopted) > 0 {
			s.log.Info("giving back the adopted shards: the node serves nothing now", "adopted", len(o.adopted))
			o.adopted, changed = nil, true
		}
		return changed
	}
	for ref, f := range o.free {
		if _, ok := o.adopted[ref]; ok || slices.Contains(share, ref) || now.Before(f.adopt) {
			continue
		}
		if o.adopted == nil {
			o.adopted = map[persistence.ShardRef]time.Time{}
		}
		o.adopted[ref] = now
		changed = true
		s.log.Warn("serving a shard no node serves (another member's view disagrees, or it is misconfigured)",
			"queue", ref.Queue, "shard", ref.Shard, "free_for", now.Sub(f.since).Round(time.Millisecond))
	}
	return changed
}

// serving reports whether the node advertises itself as able to serve:
// not draining (quiet, stopping) nor unhealthy (cannot reach the store).
func (s *Service) serving() bool {
	for _, m := range s.cfg.Members.Members() {
		if m.Name == s.cfg.Self {
			return !m.Meta.Unhealthy && !m.Meta.Draining
		}
	}
	return false
}

// adoptedList returns the adopted shards, sorted.
func (o *orphans) adoptedList() []persistence.ShardRef {
	out := make([]persistence.ShardRef, 0, len(o.adopted))
	for ref := range o.adopted {
		out = append(out, ref)
	}
	slices.SortFunc(out, persistence.ShardRef.Compare)
	return out
}

// publishFree records since when each shard is free, for Unserved.
func (s *Service) publishFree(free map[persistence.ShardRef]freeShard) {
	since := make(map[persistence.ShardRef]time.Time, len(free))
	for ref, f := range free {
		since[ref] = f.since
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeSince = since
}

// Unserved describes the shards of the node's queues that had been free
// for longer than lease_ttl + OrphanSlack at the last sweep, as of now
// ("q/0 (free for 5.2s)"), sorted; none when every shard is served.
func (s *Service) Unserved(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var late []string
	for ref, since := range s.freeSince {
		if d := now.Sub(since); d > s.cfg.LeaseTTL+OrphanSlack {
			late = append(late, fmt.Sprintf("%s (free for %s)", ref, d.Round(100*time.Millisecond)))
		}
	}
	slices.Sort(late)
	return late
}
