package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

func ref(n int) persistence.ShardRef { return persistence.ShardRef{Queue: "q", Shard: n} }

func TestPermitsLagServesOldestFirst(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPermits(1, SchedulerLag, nil, nil)
	require.True(t, p.request(ref(0), t0))
	require.False(t, p.request(ref(1), t0.Add(5*time.Second)))
	require.False(t, p.request(ref(2), t0.Add(time.Second)))
	require.Empty(t, p.grant())

	// Shard 0 finished a batch; its next job is newer than shard 2's: yield.
	require.False(t, p.keep(ref(0), t0.Add(3*time.Second)))
	require.Equal(t, []persistence.ShardRef{ref(2)}, p.grant())
	// Shard 2 is done and has older work than anyone waiting: keep.
	require.True(t, p.keep(ref(2), t0))
	p.release(ref(2))
	require.Equal(t, []persistence.ShardRef{ref(0)}, p.grant(), "0 (t0+3s) before 1 (t0+5s)")
	p.release(ref(0))
	require.Equal(t, []persistence.ShardRef{ref(1)}, p.grant())
}

func TestPermitsSeqIsRoundRobin(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPermits(2, SchedulerSeq, nil, nil)
	require.True(t, p.request(ref(0), t0))
	require.True(t, p.request(ref(1), t0))
	require.False(t, p.request(ref(2), t0.Add(-time.Hour)))
	require.False(t, p.keep(ref(0), t0), "someone waits: yield")
	require.Equal(t, []persistence.ShardRef{ref(2)}, p.grant())
	require.False(t, p.keep(ref(1), t0))
	require.Equal(t, []persistence.ShardRef{ref(0)}, p.grant(), "first in line")
	require.False(t, p.keep(ref(2), t0))
	require.Equal(t, []persistence.ShardRef{ref(1)}, p.grant())
}

func TestPermitsReleaseOfWaiterAndUnknown(t *testing.T) {
	p := newPermits(1, SchedulerLag, nil, nil)
	require.True(t, p.request(ref(0), time.Time{}))
	require.False(t, p.request(ref(1), time.Time{}))
	p.release(ref(1)) // a waiter that stopped
	p.release(ref(7)) // unknown: no effect
	p.release(ref(0))
	require.Empty(t, p.grant())
	require.Equal(t, 1, p.free)
	require.True(t, p.request(ref(3), time.Time{}))
	require.True(t, p.request(ref(3), time.Time{}), "a holder asking again keeps its permit")
	require.Equal(t, 0, p.free)
}

// docs/contract.md §9: a blocked (paused) queue's shards wait in line
// without holding up other queues, a holder of theirs yields, and they are
// served once unblocked.
func TestPermitsBlockedQueueWaits(t *testing.T) {
	t0 := time.Unix(1000, 0)
	paused := map[string]bool{"p": true}
	p := newPermits(2, SchedulerLag, nil, nil)
	p.paused = paused
	pr := func(n int) persistence.ShardRef { return persistence.ShardRef{Queue: "p", Shard: n} }

	require.False(t, p.request(pr(0), t0), "paused: waits")
	require.True(t, p.request(ref(0), t0.Add(time.Second)), "another queue is served past the paused waiter")
	require.True(t, p.request(ref(1), t0.Add(time.Second)))
	require.Empty(t, p.grant())
	p.release(ref(1))
	require.Empty(t, p.grant(), "the paused waiter gets no free permit")
	require.True(t, p.keep(ref(0), t0.Add(2*time.Second)), "the paused waiter does not take a holder's turn")

	paused["q"] = true
	require.False(t, p.keep(ref(0), t0), "a holder of a paused queue yields")
	require.Equal(t, 2, p.free)
	require.Empty(t, p.grant())

	delete(paused, "p")
	require.Equal(t, []persistence.ShardRef{pr(0)}, p.grant())
	delete(paused, "q")
	require.Equal(t, []persistence.ShardRef{ref(0)}, p.grant())
	require.Empty(t, p.waiters)
}

// docs/contract.md §9: a queue limited to fewer permits than the node has
// runs at most that many shards at once; the others wait, and are served
// as holders return theirs or the limit grows.
func TestPermitsQueueLimit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPermits(3, SchedulerSeq, map[string]int{"q": 3}, nil)
	require.False(t, p.setHeld(map[string]int{"q": 0}))
	require.False(t, p.request(ref(7), t0), "no permit of the queue held yet")
	p.release(ref(7))
	require.True(t, p.setHeld(map[string]int{"q": 1}))
	require.True(t, p.request(ref(0), t0))
	require.False(t, p.request(ref(1), t0), "at the queue's limit")
	require.True(t, p.request(persistence.ShardRef{Queue: "other"}, t0))
	require.Equal(t, map[string]int{"q": 2, "other": 1}, p.demand())
	require.Empty(t, p.grant())
	require.False(t, p.keep(ref(0), t0), "seq: the waiter of the same queue goes first")
	require.Equal(t, []persistence.ShardRef{ref(1)}, p.grant())
	require.True(t, p.setHeld(map[string]int{"q": 2}))
	require.Equal(t, []persistence.ShardRef{ref(0)}, p.grant(), "the limit grew")
	require.False(t, p.setHeld(map[string]int{"q": 1}))
	require.False(t, p.keep(ref(1), t0), "over the limit: yield")
	require.False(t, p.keep(ref(0), t0), "seq: the yielded shard's turn")
	require.Equal(t, []persistence.ShardRef{ref(1)}, p.grant())
	require.Empty(t, p.grant(), "one at a time")
}

func qref(q string, n int) persistence.ShardRef { return persistence.ShardRef{Queue: q, Shard: n} }

// The weighted scheduler shares one permit 3:1 between a queue of weight
// 3 and one of weight 1 while both wait, whatever their lag.
func TestPermitsWeightedSharesByWeight(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPermits(1, SchedulerWeighted, nil, map[string]int{"high": 3})
	require.True(t, p.request(qref("low", 0), t0))
	require.False(t, p.request(qref("high", 0), t0.Add(time.Hour)), "newer work, and the permit is taken")
	served := map[string]int{"low": 1}
	holder := qref("low", 0)
	for range 400 {
		// The holder finished a call and has more (older than anyone's).
		if !p.keep(holder, t0) {
			got := p.grant()
			require.Len(t, got, 1)
			holder = got[0]
		}
		served[holder.Queue]++
	}
	require.InDelta(t, 3.0, float64(served["high"])/float64(served["low"]), 0.05, "%v", served)
}

// A queue that was idle does not catch up on the share it did not use.
func TestPermitsWeightedIdleQueueDoesNotCatchUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPermits(1, SchedulerWeighted, nil, nil)
	require.True(t, p.request(qref("a", 0), t0))
	for range 100 {
		require.True(t, p.keep(qref("a", 0), t0), "alone: a keeps its permit")
	}
	require.False(t, p.request(qref("b", 0), t0))
	served := map[string]int{}
	holder := qref("a", 0)
	for range 20 {
		if !p.keep(holder, t0) {
			holder = p.grant()[0]
		}
		served[holder.Queue]++
	}
	require.Equal(t, map[string]int{"a": 10, "b": 10}, served, "equal weights alternate from b's arrival on")
}

// The strict scheduler serves the higher weight while any of its shards
// waits, then the oldest of a lower one.
func TestPermitsStrictServesHigherWeightFirst(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPermits(1, SchedulerStrict, nil, map[string]int{"high": 5, "mid": 2})
	require.True(t, p.request(qref("low", 0), t0))
	require.False(t, p.request(qref("mid", 0), t0.Add(2*time.Second)))
	require.False(t, p.request(qref("high", 1), t0.Add(3*time.Second)))
	require.False(t, p.request(qref("high", 0), t0.Add(4*time.Second)))
	require.False(t, p.keep(qref("low", 0), t0), "older, but a higher weight waits")
	require.Equal(t, []persistence.ShardRef{qref("high", 1)}, p.grant(), "the oldest of the highest weight")
	require.False(t, p.keep(qref("high", 1), t0.Add(5*time.Second)), "high/0 is older")
	require.Equal(t, []persistence.ShardRef{qref("high", 0)}, p.grant())
	p.release(qref("high", 1)) // it has nothing left
	require.True(t, p.keep(qref("high", 0), t0.Add(6*time.Second)), "no other shard of the highest weight waits")
	p.release(qref("high", 0))
	require.Equal(t, []persistence.ShardRef{qref("mid", 0)}, p.grant())
	p.release(qref("mid", 0))
	require.Equal(t, []persistence.ShardRef{qref("low", 0)}, p.grant())
}

// A blocked queue (paused) is passed over by the weighted schedulers too.
func TestPermitsWeightedPassesOverBlocked(t *testing.T) {
	p := newPermits(1, SchedulerStrict, nil, map[string]int{"high": 9})
	p.paused = map[string]bool{"high": true}
	require.False(t, p.request(qref("high", 0), time.Time{}), "paused")
	require.True(t, p.request(qref("low", 0), time.Time{}))
	require.True(t, p.keep(qref("low", 0), time.Time{}), "high is paused: low keeps its permit")
}
