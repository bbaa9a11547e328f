package shard

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// batchStore records each RenewShards call's shards and refuses the leases
// of the tokens it is told to.
type batchStore struct {
	persistence.Store

	mu      sync.Mutex // guards calls and refuse
	calls   [][]int
	refuse  map[string]bool
	renewed chan struct{}
}

func (s *batchStore) RenewShards(_ context.Context, leases []persistence.Lease, _ time.Duration) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var shards []int
	errs := make([]error, len(leases))
	for i, l := range leases {
		shards = append(shards, l.Shard)
		if s.refuse[l.Token] {
			errs[i] = persistence.ErrLeaseLost
		}
	}
	slices.Sort(shards)
	s.calls = append(s.calls, shards)
	s.renewed <- struct{}{}
	return errs
}

func (s *batchStore) batches() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// The Renewer renews every registered lease in one call every LeaseTTL/3,
// hands each actor its own result dated by the batch's send time, forgets a
// lease once its actor takes it back (not one of a later token), brings the
// next batch forward for a lease whose acquisition would otherwise go
// unrenewed for more than LeaseTTL/3, and sends nothing once stopped.
func TestRenewerBatchesTheNodesLeases(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	clk := clock.NewSimulated(t0)
	store := &batchStore{refuse: map[string]bool{"t2": true}, renewed: make(chan struct{}, 16)}
	r := NewRenewer(store, 3*time.Second, clk, nil)
	r.Start()
	defer func() { require.NoError(t, r.Stop(context.Background())) }()

	var mu sync.Mutex
	got := map[int][]renewed{}
	deliver := func(sh int) func(renewed) {
		return func(m renewed) {
			mu.Lock()
			defer mu.Unlock()
			got[sh] = append(got[sh], m)
		}
	}
	lease := func(sh int, token string) persistence.Lease {
		return persistence.Lease{ShardRef: persistence.ShardRef{Queue: "q", Shard: sh}, Token: token}
	}
	wait := func() {
		t.Helper()
		select {
		case <-store.renewed:
		case <-time.After(5 * time.Second):
			t.Fatal("no renewal")
		}
	}
	for sh, token := range []string{"t0", "t1", "t2"} {
		r.add(lease(sh, token), t0, deliver(sh))
	}
	clk.Advance(time.Second)
	wait()
	require.Equal(t, [][]int{{0, 1, 2}}, store.batches(), "one call for every lease")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got[2]) == 1 }, 5*time.Second, time.Millisecond)
	mu.Lock()
	for sh := range 3 {
		require.Len(t, got[sh], 1)
		require.Equal(t, t0.Add(time.Second), got[sh][0].started, "dated by the batch's send time")
	}
	require.NoError(t, got[0][0].err)
	require.ErrorIs(t, got[2][0].err, persistence.ErrLeaseLost, "each lease fenced on its own")
	mu.Unlock()

	r.remove(lease(2, "t2").ShardRef, "t2")
	r.remove(lease(1, "old").ShardRef, "old") // not shard 1's current lease: kept
	clk.Advance(time.Second)
	wait()
	require.Equal(t, []int{0, 1}, store.batches()[1])

	// Shard 2 taken again, by a call sent at 1.5 s whose reply came at
	// 2 s: the regular batch at 3 s would leave it unrenewed for 1.5 s, so
	// the batch comes at 2.5 s instead, and the next LeaseTTL/3 after it.
	r.add(lease(2, "t2b"), t0.Add(1500*time.Millisecond), deliver(2))
	clk.Advance(500 * time.Millisecond)
	wait()
	require.Equal(t, []int{0, 1, 2}, store.batches()[2], "brought forward for the new lease")
	require.Equal(t, []time.Time{t0.Add(3500 * time.Millisecond)}, clk.Timers(), "the cadence follows the last batch")

	require.NoError(t, r.Stop(context.Background()))
	clk.Advance(10 * time.Second)
	require.Len(t, store.batches(), 3, "nothing after Stop")
	require.Empty(t, clk.Timers())
}
