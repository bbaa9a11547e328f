package orderly

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// docs/contract.md §9: of the ticks missed since the last one, only the
// latest is due; none before the base, none after now.
func TestLatestTickSkipsMissedTicks(t *testing.T) {
	every, err := ParseSchedule("@every 1m")
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	require.True(t, latestTick(every, base, base.Add(59*time.Second)).IsZero(), "nothing due yet")
	require.Equal(t, base.Add(time.Minute), latestTick(every, base, base.Add(time.Minute)))
	require.Equal(t, base.Add(3*time.Hour), latestTick(every, base, base.Add(3*time.Hour+30*time.Second)), "only the latest of 180 missed ticks")

	daily, err := ParseSchedule("CRON_TZ=UTC 0 3 * * *")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 5, 3, 0, 0, 0, time.UTC),
		latestTick(daily, base, time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)), "four days down: the last 03:00 only")

	_, err = ParseSchedule("61 * * * *")
	require.Error(t, err)
	_, err = ParseSchedule("@every")
	require.Error(t, err)
}

func TestPeriodicValidation(t *testing.T) {
	workers := []Worker{{Queue: "q"}}
	_, err := validatePeriodic([]PeriodicJob{{Name: "a", Queue: "nope", Schedule: "@every 1s", ID: "x"}}, workers)
	require.ErrorContains(t, err, `queue "nope" is not one of the node's workers`)
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", Schedule: "every second", ID: "x"}}, workers)
	require.ErrorContains(t, err, "periodic job a: schedule")
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", Schedule: "@every 1s"}}, workers)
	require.ErrorContains(t, err, "id")
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", Schedule: "@every 1s", ID: "x"}, {Name: "a", Queue: "q", Schedule: "@hourly", ID: "y"}}, workers)
	require.ErrorContains(t, err, "two periodic jobs are named a")
}
