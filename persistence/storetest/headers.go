package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// headerTests check that payload headers travel with their payload
// (docs/contract.md §10).
var headerTests = []testCase{
	{"Headers_CarriedToFetch", testHeadersCarriedToFetch, needNone},
	{"Headers_MergeKeepsLowerScoresHeaders", testHeadersMergeLowerScore, needNone},
	{"Headers_KeptThroughRetry", testHeadersThroughRetry, needNone},
	{"Headers_ToMorgueAndBackByRequeue", testHeadersMorgueRequeue, needAdmin},
	{"Headers_OnOverflowPayloads", testHeadersOverflow, needAdmin},
	{"Headers_NoneStaysNone", testHeadersNone, needNone},
}

// hjob is job with headers.
func hjob(id, payload string, sc float64, h map[string]string) persistence.NewJob {
	j := job(id, payload, sc)
	j.Headers = h
	return j
}

// hdrs maps each payload's data to its headers (nil when none).
func hdrs(ps []persistence.Payload) map[string]map[string]string {
	out := make(map[string]map[string]string, len(ps))
	for _, p := range ps {
		out[string(p.Data)] = p.Headers
	}
	return out
}

func testHeadersCarriedToFetch(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	tp := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tenant": "acme"}
	e.enqueue(hjob("a", "p1", 1, tp), job("a", "p2", 2), hjob("b", "x", 1, map[string]string{"k": ""}))
	q := e.get("a")
	require.NotNil(t, q)
	require.Equal(t, map[string]map[string]string{"p1": tp, "p2": nil}, hdrs(q.Payloads))

	o := e.own(0)
	res := o.next(10)
	require.Equal(t, []string{"a", "b"}, ids(res.Batch))
	require.Equal(t, []string{"p1@1", "p2@2"}, pl(res.Batch.Jobs[0].Payloads))
	require.Equal(t, tp, res.Batch.Jobs[0].Payloads[0].Headers)
	require.Nil(t, res.Batch.Jobs[0].Payloads[1].Headers)
	require.Equal(t, map[string]string{"k": ""}, res.Batch.Jobs[1].Payloads[0].Headers)

	// The in-flight record shows them too.
	info, err := e.s.GetJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	require.NotNil(t, info.InFlight)
	require.Equal(t, tp, info.InFlight.Payloads[0].Headers)
}

// An equal payload keeps the lower score and the headers that came with it;
// at an equal score the queued payload's headers stay.
func testHeadersMergeLowerScore(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(hjob("a", "v", 5, map[string]string{"from": "first"}), hjob("a", "w", 5, map[string]string{"from": "w1"}))
	e.enqueue(hjob("a", "v", 3, map[string]string{"from": "lower"}), hjob("a", "w", 9, map[string]string{"from": "higher"}))
	e.enqueue(job("a", "w", 5))
	q := e.get("a")
	require.Equal(t, []string{"v@3", "w@5"}, pl(q.Payloads))
	require.Equal(t, map[string]map[string]string{
		"v": {"from": "lower"}, "w": {"from": "w1"},
	}, hdrs(q.Payloads))
	// A lower score without headers drops them: headers belong to the
	// lower score's enqueue.
	e.enqueue(job("a", "v", 1))
	q = e.get("a")
	require.Nil(t, hdrs(q.Payloads)["v"])
}

func testHeadersThroughRetry(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	hd := map[string]string{"attempt": "any"}
	e.enqueue(hjob("a", "v", 1, hd), job("a", "w", 2))
	o := e.own(0)
	res := o.next(1)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	o.next(0, o.fail("a", "boom", 0))
	q := e.get("a")
	require.Equal(t, 0, q.RetryCount)
	require.Equal(t, map[string]map[string]string{"v": hd, "w": nil}, hdrs(q.Payloads))
	res = o.next(1)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	require.Equal(t, hd, res.Batch.Jobs[0].Payloads[0].Headers)

	// A crash restore keeps them as well.
	require.NoError(t, e.s.ReleaseShard(e.ctx, o.lease))
	q = e.get("a")
	require.Equal(t, hd, hdrs(q.Payloads)["v"])
}

func testHeadersMorgueRequeue(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	hd := map[string]string{"tenant": "acme"}
	e.enqueue(hjob("a", "v", 1, hd))
	o := e.own(0)
	o.maxRetry = 0
	o.next(1)
	res := o.next(0, o.fail("a", "dead", 0))
	// The dead report (the retries_exhausted hook) carries them too.
	require.Len(t, res.Dead, 1)
	require.Equal(t, hd, res.Dead[0].Payloads[0].Headers)
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderID})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, hd, page.Entries[0].Payloads[0].Headers)

	n, err := e.admin().RequeueMorgue(e.ctx, e.queue, []string{"a"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	q := e.get("a")
	require.NotNil(t, q)
	require.Equal(t, hd, q.Payloads[0].Headers)
	res = o.next(1)
	require.Equal(t, hd, res.Batch.Jobs[0].Payloads[0].Headers)
}

// More payloads than a record holds inline: the 70th carries headers in
// the overflow, through a lookup, a listing, the fetch and a kill to the
// morgue and back.
func testHeadersOverflow(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	hd := map[string]string{"n": "70"}
	var jobs []persistence.NewJob
	for i := 1; i <= 80; i++ {
		j := job("a", fmt.Sprintf("p%03d", i), float64(i))
		if i == 70 {
			j.Headers = hd
		}
		jobs = append(jobs, j)
	}
	e.enqueue(jobs...)
	// An equal payload with a higher score and other headers changes
	// nothing.
	e.enqueue(hjob("a", "p070", 99, map[string]string{"n": "late"}))
	// One with a lower score takes it, with its headers, in the overflow.
	h75 := map[string]string{"n": "75, lower"}
	e.enqueue(hjob("a", "p075", 74.5, h75))

	check := func(ps []persistence.Payload) {
		t.Helper()
		require.Len(t, ps, 80)
		for i, p := range ps {
			switch i {
			case 69:
				require.Equal(t, hd, p.Headers, "payload %d", i+1)
			case 74:
				require.Equal(t, "p075", string(p.Data))
				require.Equal(t, 74.5, p.Score)
				require.Equal(t, h75, p.Headers, "payload %d", i+1)
			default:
				require.Nil(t, p.Headers, "payload %d", i+1)
			}
		}
	}
	q := e.get("a")
	require.Equal(t, 80, q.PayloadCount)
	check(q.Payloads)
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt, Payloads: 100})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)
	check(page.Jobs[0].Payloads)

	// Kill sends all of them to the morgue, requeue brings them back.
	_, err = e.admin().KillJob(e.ctx, e.queue, "a")
	require.NoError(t, err)
	mp, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderID, Payloads: 100})
	require.NoError(t, err)
	require.Len(t, mp.Entries, 1)
	check(mp.Entries[0].Payloads)
	n, err := e.admin().RequeueMorgue(e.ctx, e.queue, []string{"a"})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	o := e.own(0)
	res := o.next(1)
	require.Equal(t, []string{"a"}, ids(res.Batch))
	check(res.Batch.Jobs[0].Payloads)
}

// Jobs without headers read back without them, on every path.
func testHeadersNone(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), persistence.NewJob{ID: "b"}, persistence.NewJob{ID: "c", Headers: map[string]string{}})
	for _, id := range []string{"a", "b", "c"} {
		q := e.get(id)
		require.NotNil(t, q)
		require.Nil(t, q.Payloads[0].Headers, id)
	}
	o := e.own(0)
	res := o.next(10)
	require.Len(t, res.Batch.Jobs, 3)
	for _, j := range res.Batch.Jobs {
		require.Nil(t, j.Payloads[0].Headers, j.ID)
	}
	o.next(0, o.fail("a", "boom", time.Hour))
	require.Nil(t, e.get("a").Payloads[0].Headers)
}
