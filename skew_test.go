package orderly_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
)

// aheadClock is the system clock read d ahead, as on a host whose clock is
// wrong; its timers run in real time.
type aheadClock struct{ d time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.d) }
func (c aheadClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// A node whose clock is an hour ahead does not run delayed jobs early: the
// store compares due times with Redis's clock (docs/contract.md §3.3), and
// the node, told the delayed job is due in ten minutes although its clock
// says that time has passed, does not fetch in a loop. The due jobs
// enqueued after the delayed one are processed meanwhile, one after the
// other.
func TestNodeClockAheadRunsNoDelayedJobEarly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var handled []string
	e.start(orderly.Config{Clock: aheadClock{d: time.Hour}, Workers: []orderly.Worker{{
		Queue: "q", Shards: 1,
		Handler: func(_ context.Context, b *orderly.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range b.Jobs {
				handled = append(handled, j.ID)
			}
			return nil
		},
	}}})
	saw := func(id string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, h := range handled {
				if h == id {
					return true
				}
			}
			return false
		}
	}
	// The producer's clock is right: the job is due in ten minutes.
	require.NoError(t, e.client.Enqueue(e.ctx, "q", client.Job{ID: "in-ten-minutes", PerformAt: time.Now().Add(10 * time.Minute)}))
	for _, id := range []string{"due-1", "due-2", "due-3"} {
		e.enqueue("q", client.Job{ID: id})
		require.Eventually(t, saw(id), 10*time.Second, 5*time.Millisecond, id)
	}
	before := e.store.Counters()
	time.Sleep(2 * time.Second)
	calls := e.store.Counters().Sub(before).RoundTrips
	t.Logf("store round trips in 2 s while the delayed job waits: %d", calls)
	require.Less(t, calls, int64(100), "the node does not fetch in a loop while its clock is ahead")

	mu.Lock()
	require.Equal(t, []string{"due-1", "due-2", "due-3"}, handled, "the delayed job did not run")
	mu.Unlock()
	info, err := e.store.GetJob(e.ctx, "q", "in-ten-minutes")
	require.NoError(t, err)
	require.NotNil(t, info.Queued)
	require.False(t, errors.Is(err, persistence.ErrNotFound))
}
