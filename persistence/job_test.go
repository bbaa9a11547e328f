package persistence_test

import (
	"errors"
	"math"
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

// PerformAt is the one due-time rule of every transport.
func TestPerformAt(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name          string
		at, in        *float64
		want          time.Time
		field, reason string
	}{
		{name: "neither: the store's now", want: time.Time{}},
		{name: "at", at: f(1_800_000_000.5), want: time.Unix(1_800_000_000, 500_000_000)},
		{name: "at 0 is 1970", at: f(0), want: time.Unix(0, 0)},
		{name: "at the limit", at: f(persistence.MaxTimeSeconds), want: time.Unix(persistence.MaxTimeSeconds, 0)},
		{name: "in", in: f(90.25), want: now.Add(90250 * time.Millisecond)},
		{name: "in 0 is now", in: f(0), want: now},
		{name: "in past the Duration range", in: f(1e10), want: time.Unix(11_700_000_000, 0)},
		{name: "both", at: f(1), in: f(1), field: "perform_in", reason: "give perform_at or perform_in, not both"},
		{name: "at negative", at: f(-1), field: "perform_at", reason: "out of range: must be unix seconds between 0 and 17179869184"},
		{name: "at past the limit", at: f(persistence.MaxTimeSeconds + 1), field: "perform_at", reason: "out of range: must be unix seconds between 0 and 17179869184"},
		{name: "at NaN", at: f(math.NaN()), field: "perform_at", reason: "must be a finite number"},
		{name: "in negative", in: f(-0.5), field: "perform_in", reason: "must not be negative"},
		{name: "in infinite", in: f(math.Inf(1)), field: "perform_in", reason: "must be a finite number"},
		{name: "in past the limit", in: f(persistence.MaxTimeSeconds - 1_700_000_000 + 1), field: "perform_in", reason: "out of range: the time would be after unix second 17179869184"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := persistence.PerformAt(tc.at, tc.in, now, 3)
			if tc.field == "" {
				require.NoError(t, err)
				require.True(t, tc.want.Equal(got), "want %v, got %v", tc.want, got)
				return
			}
			var fe *persistence.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, persistence.FieldError{Field: tc.field, Index: 3, Reason: tc.reason}, *fe)
		})
	}
}

// ValidateJobs gives a time out of range the reason PerformAt gives.
func TestValidateJobsTimeRange(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.Unix(-1, 0), time.Unix(persistence.MaxTimeSeconds+1, 0)} {
		err := persistence.ValidateJobs([]persistence.NewJob{{ID: "a", PerformAt: at}}, 0)
		require.EqualError(t, err, "jobs[0].perform_at: out of range: must be unix seconds between 0 and 17179869184")
	}
	require.NoError(t, persistence.ValidateJobs([]persistence.NewJob{{ID: "a", PerformAt: time.Unix(persistence.MaxTimeSeconds, 0)}}, 0))
}
