// Package chaos holds the fault seams of the chaos test's node binary. A
// binary built with `-tags chaos` wraps its gossip transport so that SIGUSR1
// cuts the node's gossip off (both ways) and SIGUSR2 restores it, while the
// node keeps reaching Redis: a network partition of one node. Regular
// builds contain none of it (Install does nothing).
package chaos
