package server

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/config"
)

func TestCheckExposure(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	cfg := func(f func(n *config.NodeConfig)) *config.Config {
		c := &config.Config{Node: config.NodeConfig{Bind: "127.0.0.1:7946", Redis: "redis://127.0.0.1:1/0"}}
		f(&c.Node)
		return c
	}
	for _, c := range []struct {
		name string
		set  func(*config.NodeConfig)
		want string // "" when accepted
	}{
		{"defaults", func(*config.NodeConfig) {}, ""},
		{"actor loopback", func(n *config.NodeConfig) { n.ActorAddr = "127.0.0.1:8090" }, ""},
		{"actor localhost", func(n *config.NodeConfig) { n.ActorAddr = "localhost:8090" }, ""},
		{"actor lan", func(n *config.NodeConfig) { n.ActorAddr = "10.0.0.5:8090" }, "--actor-token"},
		{"actor lan token", func(n *config.NodeConfig) { n.ActorAddr, n.ActorToken = "10.0.0.5:8090", "t" }, ""},
		{"actor lan mutual TLS", func(n *config.NodeConfig) {
			n.ActorAddr, n.ActorTLSCert, n.ActorTLSKey, n.ActorTLSCA = "10.0.0.5:8090", "/c", "/k", "/ca"
		}, ""},
		{"actor lan public", func(n *config.NodeConfig) { n.ActorAddr, n.ActorPublic = "10.0.0.5:8090", true }, ""},
		{"actor wildcard", func(n *config.NodeConfig) { n.ActorAddr, n.ActorToken = "0.0.0.0:8090", "t" }, "--actor-advertise-addr"},
		{"actor wildcard v6", func(n *config.NodeConfig) { n.ActorAddr, n.ActorToken = "[::]:8090", "t" }, "--actor-advertise-addr"},
		{"actor wildcard advertised", func(n *config.NodeConfig) {
			n.ActorAddr, n.ActorToken, n.ActorAdvertiseAddr = ":8090", "t", "10.0.0.5:8090"
		}, ""},
		{"gossip lan", func(n *config.NodeConfig) { n.Bind = "10.0.0.5:7946" }, "--gossip-key"},
		{"gossip wildcard", func(n *config.NodeConfig) { n.Bind = "0.0.0.0:7946" }, "--gossip-public"},
		{"gossip key", func(n *config.NodeConfig) { n.Bind, n.GossipKey = "0.0.0.0:7946", "k" }, ""},
		{"gossip public", func(n *config.NodeConfig) { n.Bind, n.GossipPublic = "0.0.0.0:7946", true }, ""},
		{"gossip off (embedded store)", func(n *config.NodeConfig) { n.Bind, n.Redis = "0.0.0.0:7946", "" }, ""},
	} {
		err := checkExposure(cfg(c.set), log)
		if c.want == "" {
			require.NoError(t, err, c.name)
		} else {
			require.ErrorContains(t, err, c.want, c.name)
		}
	}
}
