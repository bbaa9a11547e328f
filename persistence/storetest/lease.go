package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// Leases: exclusivity and fencing (docs/contract.md §2.1, §2.5).

var leaseTests = []testCase{
	{"Fencing_StaleOwnerIsRefused", testFencing, needNone},
	{"Lease_RenewAndRelease", testLeaseRenewRelease, needNone},
	{"Guarantee5_EpochsGrowAfterLostWrites", testEpochsGrowAfterLostWrites, needNone},
	{"Guarantee5_TokensNeverReissued", testTokensNeverReissued, needNone},
	{"Lease_RenewShardsTogether", testRenewShards, needNone},
}

// A stale owner can neither fetch, acknowledge nor fail once another owner
// took the shard over, and cannot renew or release the new owner's lease.
func testFencing(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	stale, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Second)
	require.NoError(t, err)
	_, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld)
	var held *persistence.LeaseHeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "node-a", held.Holder)
	require.Positive(t, held.TTL)
	require.LessOrEqual(t, held.TTL, time.Second)

	res, err := e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))

	var fresh persistence.Lease
	require.Eventually(t, func() bool {
		h.Elapse(t, 100*time.Millisecond)
		fresh, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Greater(t, fresh.Epoch, stale.Epoch)

	_, err = e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Settle: 1, Fetch: 1, NextSeq: 2, MaxRetryCount: 25})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "ack + fetch")
	_, err = e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 25,
		Failures: []persistence.Failure{{ID: "a", Error: "x"}}})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "fail")
	_, err = e.s.Advance(e.ctx, stale, persistence.AdvanceRequest{Fetch: 5, NextSeq: 7, MaxRetryCount: 25})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "fetch")
	require.ErrorIs(t, e.s.RenewShard(e.ctx, stale, time.Minute), persistence.ErrLeaseLost)
	require.ErrorIs(t, e.s.ReleaseShard(e.ctx, stale), persistence.ErrLeaseLost)

	st := e.stats()
	require.EqualValues(t, 0, st.Processed)
	require.EqualValues(t, 0, st.Failed)
	require.EqualValues(t, 2, st.Length, "the new owner restored a")

	res, err = e.s.Advance(e.ctx, fresh, persistence.AdvanceRequest{Fetch: 5, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, ids(res.Batch))
}

// Renew extends a live lease; release restores an unsettled batch and frees
// the shard at once.
func testLeaseRenewRelease(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	l, _, err := e.s.AcquireShard(e.ctx, ref, "node-a", time.Second)
	require.NoError(t, err)
	require.Equal(t, "node-a", l.Owner)
	require.Positive(t, l.Epoch)
	require.NoError(t, e.s.RenewShard(e.ctx, l, time.Minute))
	h.Elapse(t, 1200*time.Millisecond)
	_, _, err = e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "renewed lease still held")

	e.enqueue(job("a", "v", 1))
	_, err = e.s.Advance(e.ctx, l, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	owners, err := e.s.ShardOwners(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, []persistence.ShardOwner{{Shard: 0, Owner: "node-a", Epoch: l.Epoch}}, owners)
	require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	require.EqualValues(t, 1, e.stats().Length, "release restored the unsettled batch")
	owners, err = e.s.ShardOwners(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, []persistence.ShardOwner{{Shard: 0, Owner: "", Epoch: l.Epoch}}, owners)
	l2, restored, err := e.s.AcquireShard(e.ctx, ref, "node-b", time.Minute)
	require.NoError(t, err)
	require.Zero(t, restored)
	require.Greater(t, l2.Epoch, l.Epoch)
}

// A node renews its leases together; each is fenced on its own.
func testRenewShards(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	var leases []persistence.Lease
	for sh := range 3 {
		l, _, err := e.s.AcquireShard(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: sh}, "node-a", time.Second)
		require.NoError(t, err)
		leases = append(leases, l)
	}
	require.NoError(t, e.s.ReleaseShard(e.ctx, leases[2]))
	errs := e.s.RenewShards(e.ctx, leases, time.Minute)
	require.Len(t, errs, 3)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], persistence.ErrLeaseLost)
	h.Elapse(t, 1200*time.Millisecond)
	for sh := range 2 {
		_, _, err := e.s.AcquireShard(e.ctx, persistence.ShardRef{Queue: e.queue, Shard: sh}, "node-b", time.Minute)
		require.ErrorIs(t, err, persistence.ErrLeaseHeld, "shard %d renewed", sh)
	}
	require.Empty(t, slices.DeleteFunc(e.s.RenewShards(e.ctx, nil, time.Minute), func(err error) bool { return err == nil }))
}

// docs/contract.md §2.5: an acquisition's epoch is greater than every epoch
// issued before, also when the store lost its last writes (the lease and the
// epoch counter with them), and the stale owner's calls are refused.
func testEpochsGrowAfterLostWrites(t *testing.T, h Harness) {
	if h.Lossy == nil {
		t.Skip("the harness cannot make its server lose writes")
	}
	clk := clock.NewSimulated(epoch)
	s, save, lose := h.Lossy(t, clk.Now)
	ctx := context.Background()
	ref := persistence.ShardRef{Queue: "q", Shard: 0}
	require.NoError(t, s.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	require.NoError(t, s.Enqueue(ctx, "q", []persistence.NewJob{job("a", "v", 1)}))
	save()

	var a persistence.Lease
	for i := range 3 { // a busy shard: acquisitions the store will forget
		if i > 0 {
			require.NoError(t, s.ReleaseShard(ctx, a))
		}
		l, _, err := s.AcquireShard(ctx, ref, "node-a", time.Minute)
		require.NoError(t, err)
		require.Greater(t, l.Epoch, a.Epoch)
		a = l
	}
	res, err := s.Advance(ctx, a, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))

	lose() // back to the state before the acquisitions: no lease, an older epoch

	b, _, err := s.AcquireShard(ctx, ref, "node-a", time.Minute)
	require.NoError(t, err, "the lease was lost with the writes")
	require.Greater(t, b.Epoch, a.Epoch, "epochs only grow")
	require.NotEqual(t, a.Token, b.Token)
	_, err = s.Advance(ctx, a, persistence.AdvanceRequest{Fetch: 1, NextSeq: 2, MaxRetryCount: 25})
	require.ErrorIs(t, err, persistence.ErrLeaseLost, "the forgotten owner is fenced")
	res, err = s.Advance(ctx, b, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res.Batch))
}

// docs/contract.md §2.5: two acquisitions never yield the same token, not
// even by the same owner name.
func testTokensNeverReissued(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	seen := map[string]bool{}
	var last int64
	for range 20 {
		l, _, err := e.s.AcquireShard(e.ctx, ref, "same-name", time.Minute)
		require.NoError(t, err)
		require.False(t, seen[l.Token], "token %s issued twice", l.Token)
		seen[l.Token] = true
		require.Greater(t, l.Epoch, last)
		last = l.Epoch
		require.NoError(t, e.s.ReleaseShard(e.ctx, l))
	}
}
