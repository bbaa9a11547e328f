package pull_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/pull"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// An answer applies each taken call's part itself: a call it took returns
// the answer's outcome even when its context ends right after the answer
// returned (before its goroutine ran), and a call whose context ended
// before the answer refuses its part, whose ids the answer reports lost.
func TestAnswerAppliesEachTakenCallsPart(t *testing.T) {
	t.Parallel()
	for range 20 {
		b := pull.New(nil)
		h := b.Handler("q", pull.Options{})
		ctxA, cancelA := context.WithTimeout(context.Background(), time.Minute)
		ctxB, cancelB := context.WithTimeout(context.Background(), time.Minute)
		errA, errB := make(chan error, 1), make(chan error, 1)
		go func() { errA <- h(ctxA, &orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: "a"}}}) }()
		l := pullOne(t, b)
		go func() { errB <- h(ctxB, &orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: "b"}}}) }()
		l2 := pullOne(t, b)
		require.Equal(t, "a", l.Jobs[0].ID)
		require.Equal(t, "b", l2.Jobs[0].ID)

		lost, err := b.Answer("q", l.ID, &wire.Answer{Failed: map[string]string{"a": "boom"}})
		require.NoError(t, err)
		require.Empty(t, lost)
		cancelA() // the call was taken: its outcome is the answer's
		pf, ok := orderly.AsPartialFailure(<-errA)
		require.True(t, ok)
		require.Contains(t, pf.Failed, "a")

		cancelB()
		_, err = b.Answer("q", l2.ID, nil)
		var le *pull.LeaseError
		require.ErrorAs(t, err, &le)
		require.Equal(t, pull.ReasonLost, le.Reason)
		require.ErrorIs(t, <-errB, context.Canceled)
		b.Stop()
	}
}

// pullOne pulls the next lease of queue q of b, waiting for it.
func pullOne(t *testing.T, b *pull.Broker) *pull.Lease {
	t.Helper()
	l, err := b.Pull(context.Background(), "q", 1, 10*time.Second)
	require.NoError(t, err)
	require.NotNil(t, l, errors.New("no lease"))
	return l
}

// Stop wakes the calls no pull took: each gives its ids back at once (a
// snooze of none), long before its give-back time.
func TestStopGivesPendingCallsBack(t *testing.T) {
	t.Parallel()
	b := pull.New(nil)
	h := b.Handler("q", pull.Options{Lease: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	errs := make(chan error, 2)
	for _, id := range []string{"a", "b"} {
		go func() { errs <- h(ctx, &orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: id}}}) }()
	}
	for b.Stats()["q"].Pending < 2 {
		time.Sleep(time.Millisecond)
	}
	b.Stop()
	for range 2 {
		err := <-errs // without the wake, not before an hour
		require.Equal(t, orderly.Snooze(0).Error(), err.Error())
	}
	require.Zero(t, b.Stats()["q"].Pending)
}
