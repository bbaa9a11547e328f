package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Expiry (docs/contract.md §3.15): a payload's expires_at travels with it,
// hidden from its headers; the owner finds the expired payloads of a
// fetched batch by the batch's fetched_at (the store's clock) and the
// settle removes and counts them, whatever the id's outcome.

var expiryTests = []testCase{
	{"Rule15_ExpiryTravelsWithPayloadNotAsHeader", testExpiryCarried, needNone},
	{"Rule15_ExpiredJudgedByTheFetchTime", testExpiredByFetchTime, needNone},
	{"Rule15_ExpiredRemovedAndCountedOnce", testExpiredRemoved, needNone},
	{"Rule15_ExpiredRemovedWhateverTheOutcome", testExpiredOutcomes, needNone},
	{"Rule15_MergeKeepsLowerScoresExpiry", testExpiryMerge, needNone},
}

// ejob is job expiring at exp.
func ejob(id, payload string, sc float64, exp time.Time) persistence.NewJob {
	j := job(id, payload, sc)
	j.ExpiresAt = exp
	return j
}

// expiredOf is what an owner finds expired in b.
func expiredOf(b *persistence.Batch) []persistence.Expired {
	var out []persistence.Expired
	for _, j := range b.Jobs {
		if ps := persistence.ExpiredIn(j, b.FetchedAt); len(ps) > 0 {
			out = append(out, persistence.Expired{ID: j.ID, Payloads: ps})
		}
	}
	return out
}

func testExpiryCarried(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	exp := e.at(time.Hour)
	j := ejob("a", "p1", 1, exp)
	j.Headers = map[string]string{"k": "v"}
	e.enqueue(j, ejob("a", "p2", 2, e.at(2*time.Hour)), job("a", "p3", 3))
	q := e.get("a")
	require.NotNil(t, q)
	require.True(t, q.Payloads[0].ExpiresAt.Equal(exp), "listed expiry %v", q.Payloads[0].ExpiresAt)
	require.Equal(t, map[string]string{"k": "v"}, q.Payloads[0].Headers)
	require.Nil(t, q.Payloads[1].Headers, "an expiry alone is no header")
	require.True(t, q.Payloads[2].ExpiresAt.IsZero())

	b := e.own(0).next(1).Batch
	require.NotNil(t, b)
	ps := b.Jobs[0].Payloads
	require.Equal(t, []string{"p1@1", "p2@2", "p3@3"}, pl(ps))
	require.True(t, ps[0].ExpiresAt.Equal(exp))
	require.True(t, ps[1].ExpiresAt.Equal(e.at(2*time.Hour)))
	require.Equal(t, map[string]string{"k": "v"}, ps[0].Headers)
	require.Nil(t, ps[1].Headers)
	require.Empty(t, expiredOf(b), "nothing expired an hour early")
}

// The fetch's time is the store's: a payload expiring at or before it is
// expired, one after it is not.
func testExpiredByFetchTime(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(ejob("a", "past", 1, e.at(-time.Second)), ejob("a", "now", 2, e.at(0)),
		ejob("a", "later", 3, e.at(time.Second)))
	b := e.own(0).next(1).Batch
	require.NotNil(t, b)
	require.True(t, b.FetchedAt.Equal(e.clock.Now()), "fetched at %v", b.FetchedAt)
	require.Equal(t, []persistence.Expired{{ID: "a", Payloads: []int{0, 1}}}, expiredOf(b))
}

// An id all of whose payloads expired settles as nothing (neither
// processed nor failed); an id with some is settled with the rest; the
// expired ones are gone and counted once, also when the reply is lost and
// the Advance retried.
func testExpiredRemoved(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(ejob("gone", "g1", 1, e.at(-time.Minute)), ejob("gone", "g2", 2, e.at(-time.Second)),
		ejob("mix", "m1", 1, e.at(-time.Second)), job("mix", "m2", 2), ejob("mix", "m3", 3, e.at(time.Hour)),
		ejob("live", "l1", 1, e.at(time.Hour)))
	o := e.own(0)
	b := o.next(10).Batch
	require.ElementsMatch(t, []string{"gone", "mix", "live"}, ids(b))
	ex := expiredOf(b)
	require.ElementsMatch(t, []persistence.Expired{{ID: "gone", Payloads: []int{0, 1}}, {ID: "mix", Payloads: []int{0}}}, ex)

	req := persistence.AdvanceRequest{Settle: b.Seq, Fetch: 10, NextSeq: o.seq + 1, MaxRetryCount: 25, Expired: ex}
	res, err := e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Nil(t, res.Batch)
	require.Equal(t, 3, res.Expired)
	require.Equal(t, 2, res.Processed, "mix and live were handled; gone was not")
	// The reply was lost: the same call again changes and counts nothing.
	again, err := e.s.Advance(e.ctx, o.lease, req)
	require.NoError(t, err)
	require.Equal(t, 0, again.Expired)
	st := e.stats()
	require.EqualValues(t, 3, st.Expired)
	require.EqualValues(t, 2, st.Processed)
	require.EqualValues(t, 0, st.Length)
	require.Nil(t, e.get("gone"))
}

// A failed, snoozed or dead id goes back (or to the morgue) without its
// expired payloads: they are never handed over again nor buried.
func testExpiredOutcomes(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	past := e.at(-time.Second)
	e.enqueue(ejob("f", "f1", 1, past), job("f", "f2", 2),
		ejob("s", "s1", 1, past), job("s", "s2", 2),
		ejob("d", "d1", 1, past), job("d", "d2", 2))
	o := e.own(0)
	o.maxRetry = 25
	b := o.next(10).Batch
	require.Len(t, b.Jobs, 3)
	res := o.settleWith(0, persistence.AdvanceRequest{
		Failures: []persistence.Failure{o.fail("f", "boom", 0)},
		Snoozes:  []persistence.Snooze{{ID: "s", RetryAt: e.at(time.Minute)}},
		Deaths:   []persistence.Death{{ID: "d", Reason: "poison"}},
		Expired:  expiredOf(b),
	})
	require.Equal(t, 3, res.Expired)
	require.Len(t, res.Dead, 1)
	require.Equal(t, []string{"d2@2"}, pl(res.Dead[0].Payloads))
	require.Equal(t, []string{"f2@2"}, pl(e.get("f").Payloads))
	require.Equal(t, 0, e.get("f").RetryCount)
	require.Equal(t, []string{"s2@2"}, pl(e.get("s").Payloads))
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, []string{"d2@2"}, pl(page.Entries[0].Payloads))
	require.EqualValues(t, 3, e.stats().Expired)
}

// An equal payload enqueued again keeps the lower score and the expiry
// (or none) that came with it.
func testExpiryMerge(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(ejob("a", "v", 5, e.at(time.Hour)), job("b", "v", 5))
	e.enqueue(job("a", "v", 1), ejob("b", "v", 9, e.at(time.Minute)))
	a := e.get("a")
	require.Equal(t, []string{"v@1"}, pl(a.Payloads))
	require.True(t, a.Payloads[0].ExpiresAt.IsZero(), "the lower score came without an expiry")
	b := e.get("b")
	require.Equal(t, []string{"v@5"}, pl(b.Payloads))
	require.True(t, b.Payloads[0].ExpiresAt.IsZero(), "the higher score's expiry is dropped with it")

	e.enqueue(ejob("a", "v", 0, e.at(time.Minute)))
	a = e.get("a")
	require.True(t, a.Payloads[0].ExpiresAt.Equal(e.at(time.Minute)))
}
