package orderly_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
)

func TestRetryPolicies(t *testing.T) {
	low := orderly.LowkiqRetry()
	for n, base := range map[int]float64{0: 15, 1: 16, 2: 31, 3: 96, 4: 271} {
		d := low(n, nil).Seconds()
		require.GreaterOrEqual(t, d, base, "n=%d", n)
		require.Less(t, d, base+30*float64(n+1), "n=%d", n)
	}
	lin := orderly.LinearRetry(10 * time.Second)
	require.Equal(t, 10*time.Second, lin(0, nil))
	require.Equal(t, 30*time.Second, lin(2, nil))
	exp := orderly.ExponentialRetry(time.Second, time.Minute)
	require.Equal(t, time.Second, exp(0, nil))
	require.Equal(t, 8*time.Second, exp(3, nil))
	require.Equal(t, time.Minute, exp(10, nil))
	// Huge retry counts never overflow into a negative wait.
	for _, p := range []orderly.RetryPolicy{low, lin, orderly.ExponentialRetry(time.Second, 200*365*24*time.Hour)} {
		for _, n := range []int{309, 10_000, 1 << 40} {
			d := p(n, nil)
			require.Positive(t, d)
			require.LessOrEqual(t, d, orderly.MaxRetryWait)
		}
	}
}
