package server

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/internal/remoteguard"
)

// checkExposure applies the rule of the HTTP listener to the node's other
// doors: the actor remote and gossip listen beyond loopback only with their
// secret (actor_token, gossip_key) or an explicit opt-in (actor_public,
// gossip_public), which is logged as a warning. A wildcard actor address
// needs actor_advertise_addr. Gossip runs only on Redis (nodes sharing a
// Redis form a cluster).
func checkExposure(cfg *config.Config, log *slog.Logger) error {
	n := cfg.Node
	if n.ActorAddr != "" {
		host, _, err := net.SplitHostPort(n.ActorAddr)
		if err != nil {
			return fmt.Errorf("actor_addr %s: %w", n.ActorAddr, err)
		}
		if remoteguard.IsWildcard(host) && n.ActorAdvertiseAddr == "" {
			return fmt.Errorf("the actor remote would listen on %s, every interface, and advertise an address no other host can use: set --actor-advertise-addr to the address other hosts reach it at (or listen on one address)", n.ActorAddr)
		}
		mtls := n.ActorTLSCert != ""
		if !remoteguard.IsLoopback(host) && n.ActorToken == "" && !mtls {
			if !n.ActorPublic {
				return fmt.Errorf("the actor remote would listen on %s, reachable from other hosts, without authentication: set --actor-tls-cert, --actor-tls-key and --actor-tls-ca (mutual TLS) or --actor-token (or listen on 127.0.0.1), or --actor-public to allow it", n.ActorAddr)
			}
			log.Warn("the actor remote listens on a non-loopback address without a token or TLS (actor_public): anyone who reaches it can enqueue", "actor_addr", n.ActorAddr)
		}
		if !remoteguard.IsLoopback(host) && n.ActorToken != "" && !mtls {
			log.Warn("the actor remote listens on a non-loopback address in plaintext gRPC: its token travels unencrypted, readable by anyone on the path; serve mutual TLS (--actor-tls-cert, --actor-tls-key, --actor-tls-ca) or keep it on a private network or a tunnel", "actor_addr", n.ActorAddr)
		}
	}
	if n.Redis != "" {
		host, _, err := net.SplitHostPort(n.Bind)
		if err != nil {
			return fmt.Errorf("bind %s: %w", n.Bind, err)
		}
		if !remoteguard.IsLoopback(host) && n.GossipKey == "" {
			if !n.GossipPublic {
				return fmt.Errorf("gossip would listen on %s, reachable from other hosts, in plaintext: set --gossip-key (or bind 127.0.0.1), or --gossip-public to allow it", n.Bind)
			}
			log.Warn("gossip listens on a non-loopback address without a key (gossip_public): anyone who reaches it can read the cluster's members and join it", "bind", n.Bind)
		}
	}
	return nil
}
