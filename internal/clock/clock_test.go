package clock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
)

func TestSimulatedRunsTimersInDueOrder(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	c := clock.NewSimulated(t0)
	var got []string
	var seen []time.Time
	c.AfterFunc(3*time.Second, func() { got = append(got, "c"); seen = append(seen, c.Now()) })
	c.AfterFunc(time.Second, func() { got = append(got, "a"); seen = append(seen, c.Now()) })
	stop := c.AfterFunc(2*time.Second, func() { got = append(got, "never") })
	c.AfterFunc(time.Second, func() {
		got = append(got, "b")
		// A timer set by a timer runs in the same Advance when it falls due.
		c.AfterFunc(500*time.Millisecond, func() { got = append(got, "nested") })
	})
	require.True(t, stop())
	require.False(t, stop())
	next, ok := c.Next()
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), next)
	require.Equal(t, []time.Time{t0.Add(time.Second), t0.Add(time.Second), t0.Add(3 * time.Second)}, c.Timers())

	c.Advance(2 * time.Second)
	require.Equal(t, []string{"a", "b", "nested"}, got)
	require.Equal(t, t0.Add(2*time.Second), c.Now())
	require.Equal(t, 1, c.Pending())

	c.Advance(time.Second)
	require.Equal(t, []string{"a", "b", "nested", "c"}, got)
	require.Equal(t, []time.Time{t0.Add(time.Second), t0.Add(3 * time.Second)}, seen)
	require.Equal(t, 0, c.Pending())
	_, ok = c.Next()
	require.False(t, ok)
}

func TestSimulatedNeverGoesBack(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	c := clock.NewSimulated(t0)
	c.Set(t0.Add(-time.Hour))
	require.Equal(t, t0, c.Now())
	require.Equal(t, time.Duration(0), clock.Since(c, t0))
	require.Equal(t, time.Minute, clock.Until(c, t0.Add(time.Minute)))
}

func TestZeroDelayRunsAtOnce(t *testing.T) {
	var n atomic.Int32
	done := make(chan struct{})
	clock.NewSimulated(time.Now()).AfterFunc(0, func() { n.Add(1); close(done) })
	<-done
	require.Equal(t, int32(1), n.Load())

	done2 := make(chan struct{})
	clock.Real().AfterFunc(time.Millisecond, func() { close(done2) })
	<-done2
}

func TestSleepAndAfter(t *testing.T) {
	c := clock.NewSimulated(time.Unix(1_700_000_000, 0))
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), c, time.Minute) }()
	require.Eventually(t, func() bool { return c.Pending() == 1 }, 5*time.Second, time.Millisecond)
	c.Advance(time.Minute)
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- clock.Sleep(ctx, c, time.Minute) }()
	require.Eventually(t, func() bool { return c.Pending() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Zero(t, c.Pending(), "a cancelled sleep stops its timer")

	ch, stop := clock.After(c, time.Second)
	c.Advance(time.Second)
	<-ch
	require.False(t, stop())
}

// Jump moves time as a paused process sees it: the timers due on the way do
// not run until the next Advance, and then at the late time.
func TestSimulatedJumpRunsNothingUntilTheNextAdvance(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	c := clock.NewSimulated(t0)
	var ran []time.Time
	c.AfterFunc(time.Second, func() { ran = append(ran, c.Now()) })
	c.Jump(5 * time.Second)
	require.Equal(t, t0.Add(5*time.Second), c.Now())
	require.Empty(t, ran)
	require.Equal(t, 1, c.Pending())
	c.Advance(0)
	require.Equal(t, []time.Time{t0.Add(5 * time.Second)}, ran, "the late timer runs at the time it is noticed")
}
