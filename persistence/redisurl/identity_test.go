package redisurl_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence/redisurl"
)

// Clients of every kind leave CLIENT SETINFO out of a new connection's
// handshake: one round trip less before a lease call on a new connection.
func TestClientsSkipClientSetInfo(t *testing.T) {
	for _, raw := range []string{"redis://127.0.0.1:1", "redis+cluster://127.0.0.1:1,127.0.0.1:2", "redis+sentinel://127.0.0.1:1/mymaster"} {
		u, err := redisurl.Parse(raw)
		require.NoError(t, err, raw)
		c := u.NewClient()
		switch u.Kind {
		case redisurl.Cluster:
			require.True(t, c.(*redis.ClusterClient).Options().DisableIdentity, raw)
		default:
			require.True(t, c.(*redis.Client).Options().DisableIdentity, raw)
		}
		require.NoError(t, c.Close())
	}
}
