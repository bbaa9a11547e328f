package redisstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every kind of notice channel names its queue (docs/storage.md §2); other
// channels and other prefixes name none.
func TestQueueOfChannel(t *testing.T) {
	t.Parallel()
	k := keyspace{prefix: "p"}
	require.Equal(t, "p:{orders.v2:7}:2:notify", k.shardChannel("orders.v2", 7))
	require.Equal(t, "p:{orders.v2}:2:notify", k.ctlChannel("orders.v2"))
	for _, tc := range []struct {
		channel, queue string
		ok             bool
	}{
		{k.channel("q-1"), "q-1", true},
		{k.shardChannel("q-1", 0), "q-1", true},
		{k.shardChannel("q_1", 12), "q_1", true},
		{k.ctlChannel("q.1"), "q.1", true},
		{"other:notify:q", "", false},
		{"other:{q:1}:2:notify", "", false},
		{"p:{q:1}:2:ctl", "", false},
		{"p:{}:2:notify", "", false},
		{"p:{q:1}:2:notify:x", "", false},
	} {
		q, ok := k.queueOfChannel(tc.channel)
		require.Equal(t, tc.ok, ok, tc.channel)
		require.Equal(t, tc.queue, q, tc.channel)
	}
}
