package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// docs/contract.md §3.17: while a reshard runs, the listings of the
// queue's jobs (in every order), morgue and finished records and the
// lookups by id show every id once, wherever its data stands: in its old
// shard, on its way, or in its new shard.
func testReshardListingsWhole(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	queued, dead, done := e.reshardListingData()
	sh := e.reshard(5)
	e.checkListings(queued, dead, done)
	drainers := make([]*drainer, 0, sh.From.Count)
	for _, ref := range sh.From.Refs(e.queue) {
		drainers = append(drainers, e.drainer(ref.Shard))
	}
	for progress := true; progress; {
		progress = false
		for i, d := range drainers {
			if d == nil {
				continue
			}
			progress = true
			if d.step(4).Done {
				d.o.next(0)
				require.NoError(t, e.s.ReleaseShard(e.ctx, d.o.lease))
				drainers[i] = nil
			}
			e.checkListings(queued, dead, done)
		}
	}
	fin, err := e.resharder().FinishReshard(e.ctx, e.queue)
	require.NoError(t, err)
	require.True(t, fin)
	e.checkListings(queued, dead, done)
}

// reshardListingData fills the queue: queued ids (some due later, some of
// priority 3, some failed once), morgue entries and finished records. It
// returns the ids of each.
func (e *env) reshardListingData() (queued, dead, done []string) {
	e.t.Helper()
	var jobs []persistence.NewJob
	for i := range 40 {
		id := fmt.Sprintf("q%02d", i)
		j := job(id, "p", float64(i%4))
		j.PerformAt = e.at(time.Duration(i%5-2) * time.Minute)
		if i%9 == 0 {
			j.Priority = 3
		}
		jobs = append(jobs, j, job(id, "p2", float64(10+i)))
		queued = append(queued, id)
	}
	for i := range 6 {
		dead = append(dead, fmt.Sprintf("m%d", i))
		done = append(done, fmt.Sprintf("f%d", i))
		jobs = append(jobs, job(dead[i], "dead", 1), job(done[i], "done", 1))
	}
	e.enqueue(jobs...)
	for _, id := range dead {
		killed, err := e.admin().KillJob(e.ctx, e.queue, id)
		require.NoError(e.t, err)
		require.True(e.t, killed)
	}
	// Each shard handles what is due: the finished ids end, q00..q03 fail.
	for sh := range 3 {
		o := e.own(sh)
		o.retain = time.Hour
		res := o.next(100)
		var fails []persistence.Failure
		for _, j := range res.Batch.Jobs {
			if j.ID[0] == 'q' {
				fails = append(fails, o.fail(j.ID, "boom", time.Duration(len(fails)+1)*time.Minute))
			}
		}
		o.next(0, fails...)
		require.NoError(e.t, e.s.ReleaseShard(e.ctx, o.lease))
	}
	return queued, dead, done
}

// checkListings pages through every listing, both ways, and checks that
// each shows every id of its kind once, in its order.
func (e *env) checkListings(queued, dead, done []string) {
	e.t.Helper()
	for _, rev := range []bool{false, true} {
		for _, order := range []persistence.Order{persistence.OrderID, persistence.OrderPerformAt, persistence.OrderRetryCount} {
			e.checkPages("jobs "+string(order), queued, rev, func(cur string) ([]string, []float64, string) {
				p, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: order, Limit: 7, Rev: rev, Cursor: cur})
				require.NoError(e.t, err)
				var ids []string
				var keys []float64
				for _, j := range p.Jobs {
					ids = append(ids, j.ID)
					keys = append(keys, map[persistence.Order]float64{
						persistence.OrderPerformAt: float64(j.PerformAt.UnixNano()), persistence.OrderRetryCount: float64(j.RetryCount),
					}[order])
					require.Equal(e.t, 2, j.PayloadCount, "id %s has both its payloads", j.ID)
				}
				return ids, keys, p.Next
			})
		}
		for _, order := range []persistence.Order{persistence.OrderID, persistence.OrderUpdatedAt} {
			e.checkPages("morgue "+string(order), dead, rev, func(cur string) ([]string, []float64, string) {
				p, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: order, Limit: 4, Rev: rev, Cursor: cur})
				require.NoError(e.t, err)
				var ids []string
				for _, m := range p.Entries {
					ids = append(ids, m.ID)
				}
				return ids, make([]float64, len(ids)), p.Next
			})
		}
		for _, order := range []persistence.Order{persistence.OrderID, persistence.OrderFinishedAt} {
			e.checkPages("finished "+string(order), done, rev, func(cur string) ([]string, []float64, string) {
				p, err := e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Order: order, Limit: 4, Rev: rev, Cursor: cur})
				require.NoError(e.t, err)
				return idsOf(p.Jobs), make([]float64, len(p.Jobs)), p.Next
			})
		}
	}
	for _, id := range []string{queued[0], queued[17], queued[39]} {
		p, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Min: id, Max: id})
		require.NoError(e.t, err)
		require.Len(e.t, p.Jobs, 1, "the lookup of %s", id)
		require.Equal(e.t, id, p.Jobs[0].ID)
		info, err := e.s.GetJob(e.ctx, e.queue, id)
		require.NoError(e.t, err)
		require.NotNil(e.t, info.Queued, "the lookup of %s", id)
		require.Equal(e.t, 2, info.Queued.PayloadCount)
	}
	for _, id := range []string{dead[0], done[5]} {
		info, err := e.s.GetJob(e.ctx, e.queue, id)
		require.NoError(e.t, err)
		require.True(e.t, info.Morgue != nil || info.Finished != nil, "the lookup of %s", id)
	}
}

// checkPages reads every page of a listing and checks it holds want (in
// any order: each id once) with its sort keys in order.
func (e *env) checkPages(what string, want []string, rev bool, page func(cursor string) ([]string, []float64, string)) {
	e.t.Helper()
	var got []string
	var keys []float64
	cur := ""
	for range 100 {
		ids, ks, next := page(cur)
		got, keys = append(got, ids...), append(keys, ks...)
		if next == "" {
			break
		}
		cur = next
	}
	sorted := slices.Clone(keys)
	if rev {
		slices.Reverse(sorted)
	}
	require.True(e.t, slices.IsSorted(sorted), "%s (rev %v): keys in order: %v", what, rev, keys)
	if strings.HasSuffix(what, " id") {
		byID := slices.Clone(got)
		if rev {
			slices.Reverse(byID)
		}
		require.True(e.t, slices.IsSorted(byID), "%s (rev %v): ids in order: %v", what, rev, got)
	}
	require.ElementsMatch(e.t, want, got, "%s (rev %v): every id once", what, rev)
}
