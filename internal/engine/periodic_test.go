package engine

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
)

// docs/contract.md §9: of the ticks missed since the last one, only the
// latest is due; none before the base, none after now.
func TestLatestTickSkipsMissedTicks(t *testing.T) {
	every, err := cron.ParseStandard("@every 1m")
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	require.True(t, latestTick(every, base, base.Add(59*time.Second)).IsZero(), "nothing due yet")
	require.Equal(t, base.Add(time.Minute), latestTick(every, base, base.Add(time.Minute)))
	require.Equal(t, base.Add(3*time.Hour), latestTick(every, base, base.Add(3*time.Hour+30*time.Second)), "only the latest of 180 missed ticks")

	daily, err := cron.ParseStandard("CRON_TZ=UTC 0 3 * * *")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 5, 3, 0, 0, 0, time.UTC),
		latestTick(daily, base, time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)), "four days down: the last 03:00 only")
}
