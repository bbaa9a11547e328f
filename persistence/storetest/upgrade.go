package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/clock"
	"github.com/orderlyhq/orderly/persistence"
)

// The upgrade from the previous storage layout (docs/storage.md section 8).

var upgradeTests = []testCase{
	{"Upgrade_Layout1DataServedAndDrained", testUpgrade, needNone},
}

// Upgrade: a store the previous release's nodes wrote (queued, delayed,
// retrying, in-flight and morgue jobs, counters) is served by this release
// without losing anything; layout 1 nodes are fenced out of a shard once a
// new node served it; what they enqueue meanwhile is drained in order; and
// while a shard is still served by a layout 1 node, new nodes enqueue where
// that node reads.
func testUpgrade(t *testing.T, h Harness) {
	if h.Upgrade == nil {
		t.Skip("the harness has no store of the previous layout")
	}
	u := &upgradeRun{t: t, h: h, clk: clock.NewSimulated(epoch), ctx: context.Background(), ref: persistence.ShardRef{Queue: "q", Shard: 0}}
	u.old, u.cur = h.Upgrade(t, u.clk.Now)
	lo := u.layout1AtWork()
	u.readByCurrent()
	ln := u.takeOver(lo)
	got, rc, order := u.drain(ln)
	u.checkDrained(got, rc, order)
	u.roll()
}

// upgradeRun is one run of testUpgrade: the store of the previous layout
// (old) and this release's (cur) on one namespace.
type upgradeRun struct {
	t        *testing.T
	h        Harness
	clk      *clock.Simulated
	ctx      context.Context
	ref      persistence.ShardRef
	old, cur Store
}

func (u *upgradeRun) at(d time.Duration) time.Time { return u.clk.Now().Add(d) }

// layout1AtWork has layout 1 enqueue and process: m1 dies, r1 fails, d1
// succeeds, f1 is in flight when its owner disappears. It returns that
// owner's lease.
func (u *upgradeRun) layout1AtWork() persistence.Lease {
	t, ctx, old := u.t, u.ctx, u.old
	mk := func(id, payload string, score float64, d time.Duration) persistence.NewJob {
		j := job(id, payload, score)
		j.PerformAt = u.at(d)
		return j
	}
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	require.NoError(t, old.Enqueue(ctx, "q", []persistence.NewJob{
		mk("m1", "dies", 1, -5*time.Second), mk("r1", "retries", 1, -4*time.Second),
		mk("d1", "done", 1, -3*time.Second), mk("f1", "in flight", 1, -2*time.Second),
		mk("q1", "one", 1, 0), mk("q1", "two", 2, 0), mk("w1", "later", 1, time.Hour),
	}))
	lo, _, err := old.AcquireShard(ctx, u.ref, "old-node", time.Second)
	require.NoError(t, err)
	step := func(settle, next int64, maxRetry int, fails ...persistence.Failure) persistence.AdvanceResult {
		t.Helper()
		res, err := old.Advance(ctx, lo, persistence.AdvanceRequest{Settle: settle, NextSeq: next, Fetch: 1, MaxRetryCount: maxRetry, Failures: fails})
		require.NoError(t, err)
		return res
	}
	require.Equal(t, []string{"m1"}, ids(step(0, 1, 0).Batch))
	res := step(1, 2, 0, persistence.Failure{ID: "m1", Error: "gone"})
	require.Len(t, res.Dead, 1)
	require.Equal(t, []string{"r1"}, ids(res.Batch))
	require.Equal(t, []string{"d1"}, ids(step(2, 3, 25, persistence.Failure{ID: "r1", Error: "later", RetryAt: u.at(time.Minute)}).Batch))
	require.Equal(t, []string{"f1"}, ids(step(3, 4, 25).Batch))
	return lo
}

// readByCurrent checks that a node of this release reads it all, and shows
// a node of the previous release as the owner of a shard it holds.
func (u *upgradeRun) readByCurrent() {
	t, ctx, old, cur := u.t, u.ctx, u.old, u.cur
	require.NoError(t, cur.RegisterQueue(ctx, persistence.QueueSpec{Name: "q", Shards: 1}))
	st, err := cur.Stats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 3, st[0].Length, "q1, r1, w1")
	require.EqualValues(t, 1, st[0].Retries)
	require.EqualValues(t, 1, st[0].MorgueLength)
	require.EqualValues(t, 1, st[0].Busy)
	require.EqualValues(t, 1, st[0].Processed)
	require.EqualValues(t, 2, st[0].Failed)
	info, err := cur.GetJob(ctx, "q", "q1")
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, payloadData(info.Queued.Payloads))
	// On a queue of its own, under a lease that outlives the other cases'
	// clock jumps on a shared embedded store.
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "held", Shards: 1}))
	lh, _, err := old.AcquireShard(ctx, persistence.ShardRef{Queue: "held", Shard: 0}, "old-node", 10*time.Minute)
	require.NoError(t, err)
	owners, err := cur.ShardOwners(ctx, "held")
	require.NoError(t, err)
	require.Equal(t, "old-node", owners[0].Owner, "a node of the previous release shows as the shard's owner")
	require.Equal(t, lh.Epoch, owners[0].Epoch)
	require.NoError(t, old.ReleaseShard(ctx, lh))
}

// takeOver has this release take the shard once the old owner's lease ran
// out, restoring the old owner's in-flight batch; layout 1 nodes cannot
// serve the shard any more, and what they enqueue meanwhile goes on being
// served. It returns the new owner's lease.
func (u *upgradeRun) takeOver(lo persistence.Lease) persistence.Lease {
	t, ctx, old, cur := u.t, u.ctx, u.old, u.cur
	_, _, err := cur.AcquireShard(ctx, u.ref, "new-node", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "the layout 1 owner's lease is respected")
	var ln persistence.Lease
	var restored int
	require.Eventually(t, func() bool {
		u.h.Elapse(t, 100*time.Millisecond)
		ln, restored, err = cur.AcquireShard(ctx, u.ref, "new-node", time.Minute)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, restored)

	require.ErrorIs(t, old.ReleaseShard(ctx, lo), persistence.ErrLeaseLost, "the old lease is gone")
	_, _, err = old.AcquireShard(ctx, u.ref, "old-node", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "layout 1 nodes are fenced out")
	owners, err := cur.ShardOwners(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, "new-node", owners[0].Owner, "the fence is not an owner")
	require.NoError(t, cur.ReleaseShard(ctx, ln))
	owners, err = cur.ShardOwners(ctx, "q")
	require.NoError(t, err)
	require.Empty(t, owners[0].Owner, "a fenced shard without a layout 2 lease is free")
	ln, _, err = cur.AcquireShard(ctx, u.ref, "new-node", time.Minute)
	require.NoError(t, err)
	require.NoError(t, old.Enqueue(ctx, "q", []persistence.NewJob{job("q1", "three-via-old", 3), job("n1", "new-via-old", 1)}))
	require.NoError(t, cur.Enqueue(ctx, "q", []persistence.NewJob{job("q1", "four-via-new", 4)}))
	return ln
}

// drain fetches and acknowledges everything the shard holds, now and two
// hours later, and returns the payloads and last retry count of each id
// and the ids in fetch order.
func (u *upgradeRun) drain(ln persistence.Lease) (got map[string][]string, rc map[string]int, order []string) {
	got, rc = map[string][]string{}, map[string]int{}
	seq, settle := int64(0), int64(0)
	once := func() {
		for range 100 {
			seq++
			res, err := u.cur.Advance(u.ctx, ln, persistence.AdvanceRequest{Settle: settle, NextSeq: seq, Fetch: 10, MaxRetryCount: 25})
			require.NoError(u.t, err)
			if res.Batch == nil && !res.More {
				return
			}
			settle = 0
			if res.Batch != nil {
				settle = res.Batch.Seq
				for _, j := range res.Batch.Jobs {
					got[j.ID] = append(got[j.ID], payloadData(j.Payloads)...)
					rc[j.ID] = j.RetryCount
					order = append(order, j.ID)
				}
			}
		}
		u.t.Fatal("the shard did not drain")
	}
	once()
	u.clk.Advance(2 * time.Hour)
	once()
	return got, rc, order
}

// checkDrained checks what the drain fetched: every job once, older
// payloads first, retry counts and the morgue kept, counters carried over.
func (u *upgradeRun) checkDrained(got map[string][]string, rc map[string]int, order []string) {
	t := u.t
	require.Equal(t, []string{"one", "two", "three-via-old", "four-via-new"}, got["q1"], "older payloads first, in score order (fetched: %v)", order)
	require.Equal(t, []string{"in flight"}, got["f1"])
	require.Equal(t, []string{"new-via-old"}, got["n1"])
	require.Equal(t, []string{"retries"}, got["r1"])
	require.Equal(t, 0, rc["r1"], "the retry count survives")
	require.Equal(t, []string{"later"}, got["w1"])
	require.Len(t, order, 5, "each id once: %v", order)
	page, err := u.cur.ListMorgue(u.ctx, "q", persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "m1", page.Entries[0].ID)
	require.Equal(t, []string{"dies"}, payloadData(page.Entries[0].Payloads))
	require.Equal(t, "gone", page.Entries[0].Error)
	st, err := u.cur.Stats(u.ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 0, st[0].Length)
	require.EqualValues(t, 0, st[0].Busy)
	require.EqualValues(t, 1+5, st[0].Processed)
	require.EqualValues(t, 2, st[0].Failed)
}

// roll checks a shard a layout 1 node still serves: new nodes enqueue where
// it reads, so that nothing waits behind it and nothing comes out of order.
func (u *upgradeRun) roll() {
	t, ctx, old, cur := u.t, u.ctx, u.old, u.cur
	require.NoError(t, old.RegisterQueue(ctx, persistence.QueueSpec{Name: "roll", Shards: 1}))
	require.NoError(t, cur.RegisterQueue(ctx, persistence.QueueSpec{Name: "roll", Shards: 1}))
	lr, _, err := old.AcquireShard(ctx, persistence.ShardRef{Queue: "roll"}, "old-node", time.Minute)
	require.NoError(t, err)
	require.NoError(t, old.Enqueue(ctx, "roll", []persistence.NewJob{job("x", "x1-via-old", 1)}))
	require.NoError(t, cur.Enqueue(ctx, "roll", []persistence.NewJob{job("x", "x2-via-new", 2)}))
	res, err := old.Advance(ctx, lr, persistence.AdvanceRequest{NextSeq: 1, Fetch: 10, MaxRetryCount: 25})
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, ids(res.Batch))
	require.Equal(t, []string{"x1-via-old", "x2-via-new"}, payloadData(res.Batch.Jobs[0].Payloads))
	_, _, err = cur.AcquireShard(ctx, persistence.ShardRef{Queue: "roll"}, "new-node", time.Minute)
	require.True(t, errors.Is(err, persistence.ErrLeaseHeld))
}
