package pull_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/pull"
)

// A call no pull takes gives its ids back one lease before its deadline
// (a snooze: due again at once), so that a pull always gets a full lease;
// each waiting call does, whenever it came, and a later pull takes none.
func TestUnpulledCallsGiveTheirIDsBack(t *testing.T) {
	t.Parallel()
	b := pull.New(nil)
	defer b.Stop()
	h := b.Handler("q", pull.Options{BatchSize: 1, Lease: 100 * time.Millisecond})
	errs := make(chan error, 3)
	for i, d := range []time.Duration{600 * time.Millisecond, 300 * time.Millisecond, 450 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		batch := &orderly.Batch{Queue: "q", Jobs: []orderly.Job{{ID: string(rune('a' + i))}}}
		go func() { errs <- h(ctx, batch) }()
	}
	for range 3 {
		err := <-errs
		// Cut by its deadline instead, the call would fail its ids.
		require.Error(t, err)
		require.False(t, errors.Is(err, context.DeadlineExceeded), "given back before its deadline: %v", err)
		require.Contains(t, err.Error(), "snooze")
	}
	require.Zero(t, b.Stats()["q"].Pending)
	l, err := b.Pull(context.Background(), "q", 10, 0)
	require.NoError(t, err)
	require.Nil(t, l)
}
