// Package hooks lets this module's own packages reach what package orderly
// keeps unexported, without making it orderly's API: orderlytest builds
// jobs as a node hands them over and reads what a handler left on them, and
// the fault-injection build of the binary and the root's tests replace the
// gossip transport and the resolver of seed names. Each variable holds a
// function of package orderly, set by its init; the comment of each gives
// the function's type, which the caller asserts.
package hooks

var (
	// Stateful is func(j orderly.Job, data []byte, version int64, fired bool) orderly.Job:
	// a copy of j as a stateful queue hands it to its handler, with the
	// given state and version (0: none), brought by its timer when fired.
	Stateful any
	// Recording is func(j orderly.Job) orderly.Job: a copy of j that
	// records the handler's emits, as a node hands jobs to a handler.
	Recording any
	// Outcome is func(j orderly.Job) (data []byte, deleted, changed bool,
	// at time.Time, clear, timerChanged bool, emits []orderly.Emit): what
	// the handler did to the job's state and timer, and what it emitted.
	Outcome any
	// ClusterTransport is func(c *orderly.ClusterConfig, t memberlist.Transport):
	// the node gossips through t instead of memberlist's network
	// transport (fault injection).
	ClusterTransport any
	// ClusterResolver is func(c *orderly.ClusterConfig, r cluster.Resolver):
	// the node looks its join seeds' names up through r instead of DNS
	// (the test build's hosts file).
	ClusterResolver any
)
