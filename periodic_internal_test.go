package orderly

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseCron(t *testing.T) {
	every, err := ParseCron("@every 1m")
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	require.Equal(t, base.Add(time.Minute), every.Next(base))
	require.Equal(t, "@every 1m", scheduleString(every), "PeriodicStatus shows the expression")
	daily, err := ParseCron("CRON_TZ=UTC 0 3 * * *")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), daily.Next(base))

	_, err = ParseCron("61 * * * *")
	require.ErrorContains(t, err, `schedule "61 * * * *"`)
	_, err = ParseCron("@every")
	require.Error(t, err)
}

// An "@every" period under a second, negative or with a fraction of a
// second is refused with the reason: the cron parser would tick once a
// second, or at a whole number of seconds, without a word.
func TestParseCronRefusesPeriodsTheParserWouldChange(t *testing.T) {
	for expr, msg := range map[string]string{
		"@every 0s":                      "shorter than the minimum of 1s",
		"@every 1ms":                     "shorter than the minimum of 1s",
		"@every -1s":                     "shorter than the minimum of 1s",
		"@every 999ms":                   "shorter than the minimum of 1s",
		"CRON_TZ=UTC @every 100ms":       "shorter than the minimum of 1s",
		"@every 1.5s":                    "not a whole number of seconds (the cron parser would tick every 1s)",
		"TZ=Europe/Paris @every 1m500ms": "not a whole number of seconds",
	} {
		_, err := ParseCron(expr)
		require.ErrorContains(t, err, msg, expr)
		require.ErrorContains(t, err, `schedule "`+expr+`"`)
	}
	for _, expr := range []string{"@every 1s", "@every 1m30s", "CRON_TZ=UTC @every 2h", "@hourly", "*/5 * * * *"} {
		_, err := ParseCron(expr)
		require.NoError(t, err, expr)
	}
}

// hourly is a Schedule of a program's own, without a String method.
type hourly struct{}

func (hourly) Next(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }

func TestPeriodicValidation(t *testing.T) {
	workers := []Worker{{Queue: "q"}}
	sec, err := ParseCron("@every 1s")
	require.NoError(t, err)
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "nope", Schedule: sec, ID: "x"}}, workers)
	require.ErrorContains(t, err, `queue "nope" is not one of the node's workers`)
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", ID: "x"}}, workers)
	require.ErrorContains(t, err, "periodic job a has no Schedule")
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", Schedule: sec}}, workers)
	require.ErrorContains(t, err, "id")
	_, err = validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", Schedule: sec, ID: "x"}, {Name: "a", Queue: "q", Schedule: hourly{}, ID: "y"}}, workers)
	require.ErrorContains(t, err, "two periodic jobs are named a")
	p, err := validatePeriodic([]PeriodicJob{{Name: "a", Queue: "q", Schedule: hourly{}, ID: "x"}}, workers)
	require.NoError(t, err)
	require.Len(t, p, 1)
	require.Equal(t, "orderly.hourly", scheduleString(hourly{}), "a schedule without String shows its type")
}
