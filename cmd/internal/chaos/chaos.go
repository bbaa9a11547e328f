// Package chaos holds the fault seams of the chaos test's node binary. A
// binary built with `-tags chaos` wraps its gossip transport so that SIGUSR1
// cuts the node's gossip off (both ways) and SIGUSR2 restores it, while the
// node keeps reaching Redis: a network partition of one node. With
// HoldRelayEnv set to 1 it also never relays its shards' outboxes, so that
// a test can kill it between committing emits and relaying them. Regular
// builds contain none of it (Install does nothing, WrapStore returns the
// store as it is).
package chaos

// HoldRelayEnv, set to "1" in the environment of a chaos build, makes the
// node's relay of every outbox fail (docs/storage.md §10): emits and change
// feed entries stay committed in the outbox until another node relays them.
const HoldRelayEnv = "ORDERLY_CHAOS_HOLD_RELAY"
