package orderlytest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/orderlytest"
)

// Jobs built by orderlytest carry what a node hands over, and the outcome
// shows what the handler did and only that.
func TestJobsAndOutcome(t *testing.T) {
	plain := orderlytest.NewBatch("q", orderly.Job{ID: "a"})
	require.Equal(t, "q", plain.Queue)
	require.False(t, plain.Jobs[0].Stateful())
	require.Equal(t, orderlytest.Outcome{}, orderlytest.OutcomeOf(plain.Jobs[0]), "nothing done")

	deleted := orderlytest.Stateful(orderly.Job{ID: "b"}, nil, 6)
	require.True(t, deleted.Stateful())
	require.Nil(t, deleted.State())
	require.Equal(t, int64(6), deleted.StateVersion())
	require.False(t, deleted.Timer())

	fired := orderlytest.Timer(orderly.Job{ID: "c"}, []byte("x"), 2)
	require.True(t, fired.Timer())
	require.Equal(t, "x", string(fired.State()))

	b := orderlytest.NewBatch("q", deleted, fired)
	handler := func(ctx context.Context, b *orderly.Batch) error {
		b.Jobs[0].SetState([]byte("back"))
		b.Jobs[1].DeleteState()
		b.Jobs[1].ClearTimer()
		return nil
	}
	require.NoError(t, handler(context.Background(), b))
	require.Equal(t, orderlytest.Outcome{StateChanged: true, State: []byte("back")}, orderlytest.OutcomeOf(b.Jobs[0]))
	require.Equal(t, orderlytest.Outcome{StateChanged: true, StateDeleted: true, TimerChanged: true, TimerCleared: true}, orderlytest.OutcomeOf(b.Jobs[1]))

	// A job not built by NewBatch records no emits, as one built by hand.
	loose := orderly.Job{ID: "d"}
	loose.Emit(orderly.Emit{Queue: "q", ID: "x"})
	require.Empty(t, orderlytest.OutcomeOf(loose).Emits)
}
