package persistence_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Lowkiq R1: CRC-32/IEEE of the id modulo the shard count.
func TestShardOfMatchesLowkiq(t *testing.T) {
	want := map[string]int{"0": 4, "1": 3, "2": 2, "3": 1, "4": 3, "5": 1}
	for id, shard := range want {
		require.Equal(t, shard, persistence.ShardOf(id, 5), id)
	}
}

func TestUnixSecondsRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{time.Unix(0, 0), time.Unix(1700000000, 123456000), time.Unix(1<<33, 999999000)} {
		got := persistence.FromUnixSeconds(persistence.UnixSeconds(tm))
		require.InDelta(t, 0, got.Sub(tm).Seconds(), 1e-6, "%v", tm)
	}
}

func TestUnixSecondsIsExactForDecimalFractions(t *testing.T) {
	require.Equal(t, 1700000123.25, persistence.UnixSeconds(time.Unix(1700000123, 250_000_000)))
	require.Equal(t, 1700000123.5, persistence.UnixSeconds(persistence.FromUnixSeconds(1700000123.5)))
}

func TestFieldError(t *testing.T) {
	err := persistence.ValidateJobs([]persistence.NewJob{{ID: "a"}, {ID: ""}}, 0)
	require.EqualError(t, err, "jobs[1].id: must not be empty")
	require.True(t, errors.Is(err, persistence.ErrInvalid))
	require.EqualError(t, persistence.ValidateQueueName("a b"), `queue: "a b": only letters, digits, '_', '-' and '.' are allowed, starting with a letter or digit`)
	require.NoError(t, persistence.ValidateQueueName("orders.v2-eu_1"))
	require.Error(t, persistence.ValidateQueueName("-x"))
}
