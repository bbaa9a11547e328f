package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Queue actions and metrics (docs/contract.md §3.9, §3.10).

var actionTests = []testCase{
	{"Rule9_PerformAllNow", testPerformAllNow, needAdmin},
	{"Rule9_KillAndDeleteFailed", testKillDeleteFailed, needAdmin},
	{"Rule9_DeleteJob", testDeleteJob, needAdmin},
	{"Rule9_PerformOneJobNow", testPerformJobNow, needAdmin},
	{"Rule9_KillOneJob", testKillJob, needAdmin},
	{"Rule9_LookUpJob", testLookUpJob, needNone},
	{"Rule9_LookUpMorgueOnlyID", testLookUpMorgueOnly, needAdmin},
	{"Rule10_Metrics", testMetrics, needNone},
}

// docs/contract.md §3.9: perform all now sets perform_at to now (not 0: lag
// stays true).
func testPerformAllNow(t *testing.T, h Harness) {
	e := newEnv(t, h, 4)
	var jobs []persistence.NewJob
	for i := range 1200 {
		j := job(fmt.Sprint("f", i), "v", 1)
		j.PerformAt = e.at(time.Duration(i+1) * time.Minute)
		jobs = append(jobs, j)
	}
	past := job("p", "v", 1)
	past.PerformAt = e.at(-time.Minute)
	jobs = append(jobs, past)
	e.enqueue(jobs...)

	n, err := e.admin().PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 1200, n)
	require.True(t, e.get("f999").PerformAt.Equal(e.clock.Now()))
	require.True(t, e.get("p").PerformAt.Equal(e.at(-time.Minute)), "a job already due keeps its time")
	st := e.stats()
	require.InDelta(t, 60, st.Lag, 0.001)
	n, err = e.admin().PerformAllNow(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 0, n)
}

// docs/contract.md §3.9 and Lowkiq spec 24, 25: kill failed moves retry_count
// >= 0 jobs to the morgue with all payloads; delete failed deletes them;
// fresh and in-flight jobs are untouched.
func testKillDeleteFailed(t *testing.T, h Harness) {
	for _, kill := range []bool{true, false} {
		t.Run(fmt.Sprint("kill=", kill), func(t *testing.T) {
			e := newEnv(t, h, 2)
			var jobs []persistence.NewJob
			for i := range 700 {
				id := fmt.Sprint("f", i)
				jobs = append(jobs, job(id, "a", 1), job(id, "b", 2))
			}
			e.enqueue(jobs...)
			for sh := range 2 {
				o := e.own(sh)
				for {
					res := o.next(100)
					if res.Batch == nil {
						break
					}
					var fails []persistence.Failure
					for _, j := range res.Batch.Jobs {
						fails = append(fails, o.fail(j.ID, "err "+j.ID, time.Hour))
					}
					o.next(0, fails...)
				}
				require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
			}
			e.enqueue(job("fresh", "v", 1), job("busy", "v", 1))
			o := e.own(persistence.ShardOf("busy", 2))
			for res := o.next(1); ids(res.Batch)[0] != "busy"; res = o.next(1) {
			}
			require.EqualValues(t, 700, e.stats().Retries)

			var n int
			var err error
			if kill {
				n, err = e.admin().KillFailed(e.ctx, e.queue)
			} else {
				n, err = e.admin().DeleteFailed(e.ctx, e.queue)
			}
			require.NoError(t, err)
			require.Equal(t, 700, n)
			st := e.stats()
			require.EqualValues(t, 0, st.Retries)
			require.EqualValues(t, 1, st.Busy)
			require.NotNil(t, e.get("fresh"))
			if kill {
				require.EqualValues(t, 700, st.MorgueLength)
				page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "f7", Max: "f7"})
				require.NoError(t, err)
				require.Len(t, page.Entries, 1)
				require.Equal(t, []string{"a@1", "b@2"}, pl(page.Entries[0].Payloads))
				require.Equal(t, "err f7", page.Entries[0].Error)
			} else {
				require.EqualValues(t, 0, st.MorgueLength)
			}
		})
	}
}

// docs/contract.md §3.9: delete one job (the queued entry; an in-flight one
// is untouched).
func testDeleteJob(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	ok, err := e.admin().DeleteJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = e.admin().DeleteJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.False(t, ok)
	o := e.own(0)
	require.Equal(t, []string{"b"}, ids(o.next(5).Batch))
	ok, err = e.admin().DeleteJob(e.ctx, e.queue, "b")
	require.NoError(t, err)
	require.False(t, ok)
	info, err := e.s.GetJob(e.ctx, e.queue, "b")
	require.NoError(t, err)
	require.NotNil(t, info.InFlight)
}

// docs/contract.md §3.9: perform one job now makes its queued entry due now
// with its retry count and error kept; other jobs, unknown ids and an
// in-flight batch of the id are untouched.
func testPerformJobNow(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	later := func(id string) persistence.NewJob {
		j := job(id, "v", 1)
		j.PerformAt = e.at(time.Hour)
		return j
	}
	e.enqueue(later("a"), later("b"), job("f", "v", 1))
	o := e.own(0)
	require.Equal(t, []string{"f"}, ids(o.next(1).Batch))
	o.next(0, o.fail("f", "boom", time.Hour))

	for _, id := range []string{"a", "f"} {
		ok, err := e.admin().PerformJobNow(e.ctx, e.queue, id)
		require.NoError(t, err)
		require.True(t, ok, id)
		require.True(t, e.get(id).PerformAt.Equal(e.clock.Now()), id)
	}
	require.True(t, e.get("b").PerformAt.Equal(e.at(time.Hour)), "another job keeps its time")
	f := e.get("f")
	require.Equal(t, 0, f.RetryCount)
	require.Equal(t, "boom", f.Error)
	ok, err := e.admin().PerformJobNow(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok, "a job already due is found and stays due")
	ok, err = e.admin().PerformJobNow(e.ctx, e.queue, "nope")
	require.NoError(t, err)
	require.False(t, ok)

	res := o.next(5)
	require.ElementsMatch(t, []string{"a", "f"}, ids(res.Batch))
	ok, err = e.admin().PerformJobNow(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.False(t, ok, "an id only in flight has no queued entry to change")
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.NotNil(t, info.InFlight)
	_, err = e.admin().PerformJobNow(e.ctx, "nope", "a")
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
}

// docs/contract.md §3.9: kill one job moves all its queued payloads to the
// morgue with its last error ("killed" when it never failed); an in-flight
// batch of the id is untouched and settles as usual.
func testKillJob(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	n := 2500
	if h.Light {
		n = 300
	}
	var jobs []persistence.NewJob
	for i := range n {
		jobs = append(jobs, job("big", fmt.Sprint("p", i), float64(i)))
	}
	e.enqueue(append(jobs, job("a", "x", 1), job("a", "y", 2), job("b", "v", 1))...)

	ok, err := e.admin().KillJob(e.ctx, e.queue, "big")
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, e.get("big"))
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "big", Max: "big"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, n, max(page.Entries[0].PayloadCount, len(page.Entries[0].Payloads)))
	require.Equal(t, "killed", page.Entries[0].Error)
	require.NotNil(t, e.get("b"), "another job is untouched")

	o := e.own(0)
	for res := o.next(1); ids(res.Batch)[0] != "a"; res = o.next(1) {
	}
	e.enqueue(job("a", "z", 3))
	ok, err = e.admin().KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.Equal(t, []string{"x@1", "y@2"}, pl(info.InFlight.Payloads), "the in-flight batch is untouched")
	page, err = e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "a", Max: "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"z@3"}, pl(page.Entries[0].Payloads))

	ok, err = e.admin().KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.False(t, ok, "nothing queued is left to kill")
	o.next(0, o.fail("a", "boom", time.Hour))
	ok, err = e.admin().KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	page, err = e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Min: "a", Max: "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"x@1", "y@2", "z@3"}, pl(page.Entries[0].Payloads))
	require.Equal(t, "boom", page.Entries[0].Error, "a failed job keeps its last error")
	require.EqualValues(t, 0, e.stats().Retries)
	ok, err = e.admin().KillJob(e.ctx, e.queue, "nope")
	require.NoError(t, err)
	require.False(t, ok)
}

// docs/contract.md §3.9: look one job up: queued, in flight, both, or not
// found.
func testLookUpJob(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	_, err := e.s.GetJob(e.ctx, e.queue, "nope")
	require.ErrorIs(t, err, persistence.ErrNotFound)
	e.enqueue(job("a", "v1", 1))
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.NotNil(t, info.Queued)
	require.Nil(t, info.InFlight)
	require.Equal(t, persistence.ShardOf("a", 2), info.Shard)

	o := e.own(info.Shard)
	o.next(1)
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.NotNil(t, info.InFlight)
	require.Equal(t, "node-a", info.InFlight.Owner)
	require.Equal(t, []string{"v1@1"}, pl(info.InFlight.Payloads))

	e.enqueue(job("a", "v2", 2))
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Equal(t, []string{"v2@2"}, pl(info.Queued.Payloads))
	require.Equal(t, []string{"v1@1"}, pl(info.InFlight.Payloads))
}

// docs/contract.md §3.9: an id that is only in the morgue is found, with
// its morgue entry (payload count, error, first and last death); an id
// with a queued entry and a morgue entry shows both.
func testLookUpMorgueOnly(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	e.enqueue(job("a", "v1", 1), job("a", "v2", 2))
	ok, err := e.admin().KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.True(t, ok)
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err, "an id only in the morgue is found")
	require.Nil(t, info.Queued)
	require.Nil(t, info.InFlight)
	require.NotNil(t, info.Morgue)
	m := info.Morgue
	require.Equal(t, "a", m.ID)
	require.Equal(t, 2, m.PayloadCount)
	require.Equal(t, []string{"v1@1", "v2@2"}, pl(m.Payloads))
	require.Equal(t, "killed", m.Error)
	require.False(t, m.FirstAt.IsZero(), "a new entry keeps its creation time")
	require.False(t, m.UpdatedAt.Before(m.FirstAt))
	first := m.FirstAt

	e.enqueue(job("a", "v3", 3))
	_, err = e.admin().KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	e.enqueue(job("a", "v4", 4))
	info, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.Equal(t, []string{"v4@4"}, pl(info.Queued.Payloads))
	require.NotNil(t, info.Morgue)
	require.Equal(t, 3, info.Morgue.PayloadCount)
	require.True(t, info.Morgue.FirstAt.Equal(first), "a merge keeps the creation time")
	require.False(t, info.Morgue.UpdatedAt.Before(first))

	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.True(t, page.Entries[0].FirstAt.Equal(first), "listings show it too")

	_, err = e.admin().DeleteMorgue(e.ctx, e.queue, []string{"a"})
	require.NoError(t, err)
	_, err = e.admin().DeleteJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	_, err = e.s.GetJob(e.ctx, e.queue, "a")
	require.ErrorIs(t, err, persistence.ErrNotFound, "404 only when nothing is known")
}

// docs/contract.md §3.10 and Lowkiq spec 35 to 38.
func testMetrics(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	st := e.stats()
	require.Equal(t, persistence.QueueStats{Name: "q", Shards: 3, ShardLag: []float64{0, 0, 0}}, st)

	a := job("a", "v", 1)
	a.PerformAt = e.at(-10 * time.Second)
	e.enqueue(a, job("b", "v", 1))
	st = e.stats()
	require.EqualValues(t, 2, st.Length)
	require.EqualValues(t, 2, st.Fresh)
	require.InDelta(t, 10.0, st.Lag, 1e-6)
	// The lag per shard: a's shard lags 10s; a shard without a due job 0.
	require.Len(t, st.ShardLag, 3)
	require.InDelta(t, 10.0, st.ShardLag[persistence.ShardOf("a", 3)], 1e-6)
	for sh, lag := range st.ShardLag {
		if sh != persistence.ShardOf("a", 3) && sh != persistence.ShardOf("b", 3) {
			require.Zero(t, lag, "shard %d", sh)
		}
	}

	f := newEnv(t, h, 1)
	c := job("c", "v", 1)
	c.PerformAt = f.at(10 * time.Second)
	f.enqueue(c)
	require.Equal(t, 0.0, f.stats().Lag)

	g := newEnv(t, h, 1)
	g.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	o := g.own(0)
	o.next(1)
	o.next(1, o.fail("a", "x", time.Hour))
	st = g.stats()
	require.EqualValues(t, 1, st.Failed)
	require.EqualValues(t, 1, st.Busy)
	require.EqualValues(t, 2, st.Length)
	require.EqualValues(t, 1, st.Fresh)
	require.EqualValues(t, 1, st.Retries)
	o.next(0)
	st = g.stats()
	require.EqualValues(t, 1, st.Processed)
	require.EqualValues(t, 0, st.Busy)
}
