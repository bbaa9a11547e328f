package deferred_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/deferred"
	"github.com/orderlyhq/orderly/persistence"
)

var errBoom = errors.New("boom")

// A held call settles once, with the error its holder ended it with,
// converted by its outcome.
func TestEndSettlesOnce(t *testing.T) {
	var got []error
	c := deferred.New(context.Background(), func(err error) { got = append(got, err) })
	ctx := deferred.With(context.Background(), c)
	require.Same(t, c, deferred.From(ctx))
	require.Nil(t, deferred.From(context.Background()))

	c.End(errBoom) // not held: nothing to end
	require.Empty(t, got)
	require.NoError(t, c.Hold(func(error) { t.Fatal("not stopped") }))
	require.True(t, c.Held())
	c.End(errBoom)
	c.End(nil)
	require.Equal(t, []error{errBoom}, got)

	c.SetOutcome(func(err error) ([]persistence.Failure, error) {
		return []persistence.Failure{{ID: "a", Error: err.Error()}}, nil
	})
	fs, err := c.Outcome(errBoom)
	require.NoError(t, err)
	require.Equal(t, "boom", fs[0].Error)
}

// Stop asks the holder to end the call; a call stopped before it was held
// cannot be held, and Hold says why.
func TestStop(t *testing.T) {
	c := deferred.New(context.Background(), func(error) {})
	var stopped error
	require.NoError(t, c.Hold(func(cause error) { stopped = cause }))
	c.Stop(persistence.ErrCancelled)
	require.ErrorIs(t, stopped, persistence.ErrCancelled)
	require.ErrorIs(t, c.Cause(), persistence.ErrCancelled)

	early := deferred.New(context.Background(), func(error) { t.Fatal("never held") })
	early.Stop(persistence.ErrCancelled)
	require.ErrorIs(t, early.Hold(func(error) { t.Fatal("not held") }), persistence.ErrCancelled)
	require.False(t, early.Held())
	early.End(nil)
}

// Settled: the node settles a call not held, and a held one its holder
// did not end yet (the holder hears of it, and a later End is ignored),
// but not one its holder ended already.
func TestSettled(t *testing.T) {
	ends := 0
	free := deferred.New(context.Background(), func(error) { ends++ })
	require.True(t, free.Settled())

	held := deferred.New(context.Background(), func(error) { ends++ })
	var stopped error
	require.NoError(t, held.Hold(func(cause error) { stopped = cause }))
	require.True(t, held.Settled())
	require.ErrorIs(t, stopped, deferred.ErrSettled)
	held.End(nil)
	require.Zero(t, ends)

	ended := deferred.New(context.Background(), func(error) { ends++ })
	require.NoError(t, ended.Hold(func(error) {}))
	ended.End(nil)
	require.False(t, ended.Settled())
	require.Equal(t, 1, ends)
}

// OnEnd runs once the call ended, before the node settles it, and at once
// when it had ended.
func TestOnEnd(t *testing.T) {
	var order []string
	c := deferred.New(context.Background(), func(error) { order = append(order, "settled") })
	require.NoError(t, c.Hold(func(error) {}))
	c.OnEnd(func(err error) { order = append(order, "hook:"+err.Error()) })
	c.End(errBoom)
	c.OnEnd(func(err error) { order = append(order, "late:"+err.Error()) })
	require.Equal(t, []string{"hook:boom", "settled", "late:boom"}, order)

	s := deferred.New(context.Background(), func(error) {})
	require.NoError(t, s.Hold(func(error) {}))
	var got error
	s.OnEnd(func(err error) { got = err })
	require.True(t, s.Settled())
	require.ErrorIs(t, got, deferred.ErrSettled)
}
