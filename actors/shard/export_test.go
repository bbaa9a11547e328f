package shard

import "github.com/orderlyhq/orderly/persistence"

// Registered reports whether an actor of ref is registered with the poller.
func (p *Poller) Registered(ref persistence.ShardRef) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.shards[ref]
	return ok
}
