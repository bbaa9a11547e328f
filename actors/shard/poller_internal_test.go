package shard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// pollStore answers PollShards from a set of shards with work, records each
// call's shards, and fails when told to.
type pollStore struct {
	persistence.Store

	mu     sync.Mutex // guards the fields below
	calls  [][]int
	work   map[int]bool
	err    error
	polled chan struct{}
}

func (s *pollStore) PollShards(_ context.Context, refs []persistence.ShardRef) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.polled <- struct{}{} }()
	var shards []int
	out := make([]bool, len(refs))
	for i, r := range refs {
		shards = append(shards, r.Shard)
		out[i] = s.work[r.Shard]
	}
	slices.Sort(shards)
	s.calls = append(s.calls, shards)
	if s.err != nil {
		return nil, s.err
	}
	return out, nil
}

func (s *pollStore) history() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// The Poller asks about every registered shard in one call per interval,
// wakes only the shards with work, forgets a shard its actor takes back
// (not one a later incarnation registered), wakes nobody when the poll
// fails, and polls nothing once stopped.
func TestPollerPollsTheIdleShardsTogether(t *testing.T) {
	t.Parallel()
	clk := clock.NewSimulated(time.Unix(1_700_000_000, 0))
	store := &pollStore{work: map[int]bool{1: true}, polled: make(chan struct{}, 16)}
	p := NewPoller(store, 5*time.Second, clk, nil)
	p.Start()
	defer func() { require.NoError(t, p.Stop(context.Background())) }()
	wait := func() {
		t.Helper()
		select {
		case <-store.polled:
		case <-time.After(5 * time.Second):
			t.Fatal("no poll")
		}
	}
	var woken [3]atomic.Int32
	ref := func(sh int) persistence.ShardRef { return persistence.ShardRef{Queue: "q", Shard: sh} }
	for sh := range 3 {
		p.add(ref(sh), 7, func() { woken[sh].Add(1) })
	}
	clk.Advance(5 * time.Second)
	wait()
	require.Equal(t, [][]int{{0, 1, 2}}, store.history(), "one call for every idle shard")
	require.Eventually(t, func() bool { return woken[1].Load() == 1 }, 5*time.Second, time.Millisecond)

	p.remove(ref(2), 7)
	p.remove(ref(0), 8) // another incarnation's: kept
	store.mu.Lock()
	store.err = errors.New("connection refused")
	store.mu.Unlock()
	clk.Advance(5 * time.Second)
	wait()
	require.Equal(t, []int{0, 1}, store.history()[1])

	store.mu.Lock()
	store.err = nil
	store.mu.Unlock()
	clk.Advance(5 * time.Second)
	wait()
	require.Eventually(t, func() bool { return woken[1].Load() == 2 }, 5*time.Second, time.Millisecond)
	require.Zero(t, woken[0].Load(), "no work: not woken")
	require.Zero(t, woken[2].Load())

	require.NoError(t, p.Stop(context.Background()))
	require.Equal(t, int32(2), woken[1].Load(), "the failed poll woke nobody")
	clk.Advance(time.Minute)
	require.Len(t, store.history(), 3, "nothing after Stop")
	require.Empty(t, clk.Timers())
}
