package orderly

import (
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/orderlyhq/orderly/cluster"
	"github.com/orderlyhq/orderly/internal/hooks"
)

// The hooks of internal/hooks: tests of handlers and of transports build
// jobs as a node hands them over and read what the handler left on them,
// through orderlytest; the fault-injection build of the binary and the
// tests give a cluster member its own gossip transport and DNS resolver.
func init() {
	hooks.Stateful = func(j Job, data []byte, version int64, fired bool) Job {
		j.st = &entityState{stateful: true, data: data, version: version, fired: fired}
		return j
	}
	hooks.Recording = func(j Job) Job {
		j.em = &emitBox{}
		return j
	}
	hooks.Outcome = outcome
	hooks.ClusterTransport = func(c *ClusterConfig, t memberlist.Transport) { c.transport = t }
	hooks.ClusterResolver = func(c *ClusterConfig, r cluster.Resolver) { c.resolver = r }
}

// outcome returns what the handler did to j's state (changed: it set or
// deleted it; deleted: a delete; else data is the new state) and timer
// (changed: it set or cleared it; clear: cleared; else at), and what it
// emitted.
func outcome(j Job) (data []byte, deleted, changed bool, at time.Time, clear, timerChanged bool, emits []Emit) {
	w, ok := j.stateWrite()
	tw, tok := j.timerWrite()
	return w.Data, w.Delete, ok, tw.At, tw.Clear, tok, j.emits()
}
