// Package chaos holds the fault seams of the chaos test's node binary. A
// binary built with `-tags chaos` wraps its gossip transport so that SIGUSR1
// cuts the node's gossip off (both ways) and SIGUSR2 restores it, while the
// node keeps reaching Redis: a network partition of one node. With
// HoldRelayEnv set to 1 it also never relays its shards' outboxes, so that
// a test can kill it between committing emits and relaying them. With
// HostsEnv naming a file, it looks its join seeds' names up in that file
// instead of DNS, so that a test plays a DNS server whose answers change.
// Regular
// builds contain none of it (Install does nothing, WrapStore returns the
// store as it is).
package chaos

// HoldRelayEnv, set to "1" in the environment of a chaos build, makes the
// node's relay of every outbox fail (docs/storage.md §10): emits and change
// feed entries stay committed in the outbox until another node relays them.
const HoldRelayEnv = "ORDERLY_CHAOS_HOLD_RELAY"

// HostsEnv, set in the environment of a chaos build, names a file that
// replaces DNS for the node's join seeds: one name a line followed by its
// answers, separated by spaces; an answer host:port is an SRV record
// (target and port), a bare IP address an address record; '#' starts a
// comment. The file is read at every lookup, and a name it does not list
// (or a file that does not exist yet) is not found.
const HostsEnv = "ORDERLY_CHAOS_HOSTS"
