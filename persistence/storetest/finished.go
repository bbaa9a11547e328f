package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Finished ids (docs/contract.md §3.14).
var finishedTests = []testCase{
	{"Rule14_FinishedRecordWrittenAtAck", testFinishedAtAck, needFinished},
	{"Rule14_NoFinishedRecordWithoutRetention", testFinishedOff, needFinished},
	{"Rule14_FinishedTrimmedByTimeAndCount", testFinishedTrim, needFinished},
	{"Rule14_RetriedAdvanceWritesFinishedOnce", testFinishedRetried, needFinished},
	{"Rule14_FinishedListingPages", testFinishedPages, needFinished},
	{"Rule14_FinishedKeepsTheLastAttempts", testFinishedAttempts, needFinished},
}

// docs/contract.md §3.14: the finished record keeps the last
// MaxAttemptHistory failed attempts, with their times; attempts counts
// them all.
func testFinishedAttempts(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1))
	o := e.own(0)
	o.retain = time.Hour
	o.next(1)
	for i := range 7 {
		e.clock.Advance(time.Second)
		o.next(1, o.fail("a", fmt.Sprintf("e%d", i), 0))
	}
	e.clock.Advance(time.Second)
	o.next(1)
	fin := e.listFinished()
	require.Len(t, fin, 1)
	require.Equal(t, 8, fin[0].Attempts)
	require.Equal(t, "e6", fin[0].Error)
	require.Len(t, fin[0].Errors, persistence.MaxAttemptHistory)
	for i, ae := range fin[0].Errors {
		require.Equal(t, fmt.Sprintf("e%d", i+2), ae.Error)
		require.True(t, ae.At.Equal(epoch.Add(time.Duration(i+3)*time.Second)), "attempt %d at %v", i, ae.At)
	}
	// The history went with the record: the next finish of the id starts
	// a new one.
	e.enqueue(job("a", "v2", 2))
	o.next(1)
	o.next(1)
	fin = e.listFinished()
	require.Equal(t, 1, fin[0].Attempts)
	require.Nil(t, fin[0].Errors)
}

// finished returns the store's FinishedStore role, which the case must
// have declared (needFinished).
func (e *env) finished() persistence.FinishedStore {
	e.t.Helper()
	require.NotZero(e.t, e.h.needs&needFinished, "the case calls FinishedStore without declaring needFinished")
	return e.s.(persistence.FinishedStore)
}

// listFinished returns the ids of the queue's finished records, earliest
// first.
func (e *env) listFinished() []persistence.FinishedJob {
	e.t.Helper()
	page, err := e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Limit: 1000})
	require.NoError(e.t, err)
	return page.Jobs
}

// docs/contract.md §3.14: with retain_finished, an acknowledged id leaves a
// finished record: finished_at, attempts (its retry count + 2), the error
// of its last failed attempt and the result the handler set; a lookup
// finds it; failed ids leave none.
func testFinishedAtAck(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1), job("c", "v", 1))
	o := e.own(0)
	o.retain = time.Hour
	o.next(10)
	o.next(10, o.fail("a", "boom", 0), o.fail("c", "bang", time.Hour))
	require.Equal(t, []string{"b"}, idsOf(e.listFinished()), "b succeeded at once; a and c failed")
	e.clock.Advance(time.Second)
	o.results = map[string][]byte{"a": []byte(`{"ok":true}`)}
	o.next(10)
	o.next(10)
	fin := e.listFinished()
	require.Equal(t, []string{"b", "a"}, idsOf(fin), "by finished_at")
	a := fin[1]
	require.Equal(t, 2, a.Attempts, "a took two calls")
	require.Equal(t, "boom", a.Error, "the error of its last failed attempt")
	require.Len(t, a.Errors, 1, "its attempt history")
	require.Equal(t, "boom", a.Errors[0].Error)
	require.True(t, a.Errors[0].At.Equal(epoch), "failed at %v", a.Errors[0].At)
	require.Equal(t, `{"ok":true}`, string(a.Result))
	require.True(t, a.FinishedAt.Equal(e.clock.Now()), "finished_at %v", a.FinishedAt)
	b := fin[0]
	require.Equal(t, 1, b.Attempts)
	require.Empty(t, b.Error)
	require.Nil(t, b.Errors)
	require.Nil(t, b.Result, "no result set")

	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err, "a lookup finds a retained finished id")
	require.Nil(t, info.Queued)
	require.NotNil(t, info.Finished)
	require.Equal(t, a, *info.Finished)
	info, err = e.s.GetJob(e.ctx, e.queue, "c")
	require.NoError(t, err)
	require.Nil(t, info.Finished, "c is still queued, not finished")

	// A result bigger than the limit fails the Advance, changing nothing.
	o.results = map[string][]byte{"c": make([]byte, persistence.MaxResultBytes+1)}
	_, err = o.advance(1)
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "result", fe.Field)
}

// docs/contract.md §3.14: without retain_finished nothing is kept, also
// a result the handler set.
func testFinishedOff(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1))
	o := e.own(0)
	o.next(1)
	o.results = map[string][]byte{"a": []byte("r")}
	o.next(1)
	require.Empty(t, e.listFinished())
	_, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.ErrorIs(t, err, persistence.ErrNotFound)
}

// docs/contract.md §3.14: the owner trims records finished before the
// cut-off; beyond the most kept, the earliest finished go at once.
func testFinishedTrim(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	o := e.own(0)
	o.retain, o.maxFinished = time.Hour, 3
	for i := range 5 {
		id := fmt.Sprintf("j%d", i)
		e.enqueue(job(id, "v", 1))
		o.next(1)
		o.next(0)
		o.cur = nil
		e.clock.Advance(time.Minute)
	}
	require.Equal(t, []string{"j2", "j3", "j4"}, idsOf(e.listFinished()), "at most 3, the latest")
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	// j2 finished 3 minutes ago, j3 2, j4 1.
	n, err := e.s.TrimFinished(e.ctx, ref, e.at(-150*time.Second), 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"j3", "j4"}, idsOf(e.listFinished()))
	_, err = e.s.GetJob(e.ctx, e.queue, "j2")
	require.ErrorIs(t, err, persistence.ErrNotFound, "a trimmed id is unknown")
}

// docs/contract.md §3.14 and §2.3: an Advance retried after a lost reply
// writes the finished records once.
func testFinishedRetried(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	o := e.own(0)
	o.retain = time.Hour
	o.next(1)
	req := persistence.AdvanceRequest{Settle: o.cur.Seq, Fetch: 1, NextSeq: o.seq + 1, MaxRetryCount: 25,
		RetainFinished: time.Hour, Results: map[string][]byte{"a": []byte("first")}}
	_, err := e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	first := e.listFinished()
	require.Len(t, first, 1)
	e.clock.Advance(time.Second)
	req.Results = map[string][]byte{"a": []byte("second")}
	_, err = e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Equal(t, first, e.listFinished(), "the retried call changed nothing")
}

// docs/contract.md §3.14: the listing pages by finished_at, both ways,
// across shards, with bounds.
func testFinishedPages(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("f%d", i)
		want = append(want, id)
		e.enqueue(job(id, "v", 1))
		o := e.own(persistence.ShardOf(id, 3))
		o.retain = time.Hour
		o.next(1)
		o.next(0)
		require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
		if i != 3 {
			e.clock.Advance(time.Second) // f3 and f4 tie
		}
	}
	e.pageFinished(want)
	lo := fmt.Sprint(persistence.UnixSeconds(epoch) + 1)
	hi := fmt.Sprint(persistence.UnixSeconds(epoch) + 3)
	page, err := e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Min: lo, Max: hi})
	require.NoError(t, err)
	require.Equal(t, []string{"f1", "f2", "f3", "f4"}, idsOf(page.Jobs))
	_, err = e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderRetryCount})
	var fe *persistence.FieldError
	require.ErrorAs(t, err, &fe)
	// By id, both ways, paged; bounds are ids.
	for _, rev := range []bool{false, true} {
		var got []string
		cursor := ""
		for range 10 {
			page, err := e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderID, Limit: 3, Rev: rev, Cursor: cursor})
			require.NoError(t, err)
			got = append(got, idsOf(page.Jobs)...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		exp := want
		if rev {
			exp = reversed(want)
		}
		require.Equal(t, exp, got, "by id, rev %v", rev)
	}
	page, err = e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderID, Min: "f2", Max: "f4"})
	require.NoError(t, err)
	require.Equal(t, []string{"f2", "f3", "f4"}, idsOf(page.Jobs))

	// All finished at one time, in one settle per shard: pages by id.
	g := newEnv(t, h, 3)
	want = nil
	for i := range 9 {
		id := fmt.Sprintf("g%d", i)
		want = append(want, id)
		g.enqueue(job(id, "v", 1))
	}
	for sh := range 3 {
		o := g.own(sh)
		o.retain = time.Hour
		o.next(100)
		o.next(0)
	}
	g.pageFinished(want)
}

// pageFinished requires the finished listing, paged by 2, to be want, and
// its reverse to be want reversed.
func (e *env) pageFinished(want []string) {
	t := e.t
	for _, rev := range []bool{false, true} {
		var got []string
		cursor := ""
		for range 10 {
			page, err := e.finished().ListFinished(e.ctx, e.queue, persistence.ListOptions{Limit: 2, Rev: rev, Cursor: cursor})
			require.NoError(t, err)
			got = append(got, idsOf(page.Jobs)...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		exp := want
		if rev {
			exp = reversed(want)
		}
		require.Equal(t, exp, got, "rev %v", rev)
	}
}

func idsOf(js []persistence.FinishedJob) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
