package engine

import (
	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/messages"
)

// Members returns the cluster's members as this node sees it, itself
// included, by name; a node without a cluster is a member alone, alive.
func (e *Engine) Members() []cluster.Member {
	e.mu.Lock()
	m, sys := e.members, e.sys
	e.mu.Unlock()
	if m != nil {
		return m.Members()
	}
	self := cluster.Member{Name: e.cfg.Name, State: cluster.StateAlive,
		Meta: cluster.Meta{Queues: e.queueNames(), Version: e.cfg.Version}}
	if e.cfg.Remote != nil && sys != nil {
		self.Meta.Actor = sys.Address()
	}
	return []cluster.Member{self}
}

// membersMessage answers the enqueue actor's MembersRequest.
func (e *Engine) membersMessage() *messages.MembersResponse {
	out := &messages.MembersResponse{Self: e.cfg.Name}
	for _, m := range e.Members() {
		out.Members = append(out.Members, &messages.Member{
			Name: m.Name, State: m.State, Http: m.Meta.HTTP, Actor: m.Meta.Actor, Queues: m.Meta.Queues, Version: m.Meta.Version,
		})
	}
	return out
}
