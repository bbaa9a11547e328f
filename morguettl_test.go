package orderly_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
)

// TestMorgueTTLEnforcedSoonAfterExpiry: a morgue entry is deleted soon
// after it is morgue_ttl old, on a shard its node has served for a while
// (not only when a shard is acquired): with a TTL of 2 s, well within the
// test's window, where the retention used to wait an hour.
func TestMorgueTTLEnforcedSoonAfterExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(orderly.Config{MorgueTTL: 2 * time.Second, Workers: []orderly.Worker{{
		Queue: "q", Shards: 1, MaxRetryCount: orderly.NoRetries,
		Handler: func(context.Context, *orderly.Batch) error { return errors.New("boom") },
	}}})
	e.enqueue("q", client.Job{ID: "a", Payload: []byte("1")})
	require.Eventually(t, func() bool { return e.stats("q").MorgueLength == 1 }, 20*time.Second, 20*time.Millisecond,
		"the job dies")
	require.Eventually(t, func() bool { return e.stats("q").MorgueLength == 0 }, 20*time.Second, 50*time.Millisecond,
		"the expired entry is deleted")
}
