package shard

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// The call records of a concurrent window go back to the actor's pool
// once its calls returned and their outcomes were merged: the next window
// gets the same records, zeroed, so that nothing of a call leaks into a
// later window's outcome; a longer window gets new ones, and a released
// pool (the shard ran dry) keeps none.
func TestCallGroupRecordsAreReusedZeroed(t *testing.T) {
	t.Parallel()
	p := &callPool{}
	defer p.stop()
	g := newCallGroup(2, 4, p)
	for i := range 4 {
		gc := g.call()
		gc.part.failures = []persistence.Failure{{ID: string(rune('a' + i)), Error: "boom"}}
		gc.part.skipped = []string{"s"}
		gc.batch.Jobs = []persistence.Job{{ID: string(rune('a' + i))}}
	}
	first := &g.calls[0]
	var out processed
	g.wait(&out)
	require.Len(t, out.failures, 4)
	require.Len(t, out.skipped, 4)

	g2 := newCallGroup(2, 3, p)
	require.Same(t, first, &g2.calls[0], "the records of the last window are reused")
	for i := range g2.calls {
		require.Equal(t, g2, g2.calls[i].g)
		gc := g2.calls[i]
		gc.g = nil
		require.Zero(t, gc, "a reused record is zeroed")
	}
	var out2 processed
	g2.wait(&out2)
	require.Empty(t, out2.failures)

	g3 := newCallGroup(2, 5, p)
	third := &g3.calls[0]
	require.NotSame(t, first, third, "a longer window gets records of its own")
	g3.wait(&processed{})
	p.release()
	g4 := newCallGroup(2, 1, p)
	require.NotSame(t, third, &g4.calls[0], "a released pool keeps no records")
}
