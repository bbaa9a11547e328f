package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// Listings of queued jobs and morgue entries (docs/contract.md §6.3).

var listingTests = []testCase{
	{"Listing_Orders", testListingOrders, needNone},
	{"Listing_PagesThroughTies", testListingTies, needNone},
	{"Listing_Bounds", testListingBounds, needNone},
	{"Listing_BadOptions", testListingBadOptions, needNone},
}

func listIDs(t *testing.T, e *env, opts persistence.ListOptions) []string {
	t.Helper()
	page, err := e.s.ListJobs(e.ctx, e.queue, opts)
	require.NoError(t, err)
	var out []string
	for _, j := range page.Jobs {
		out = append(out, j.ID)
	}
	return out
}

// Lowkiq spec 33: the six orders of the queue listing.
func testListingOrders(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	e.enqueue(job("1", "v", 1))
	o := e.own(persistence.ShardOf("1", 3))
	require.Equal(t, []string{"1"}, ids(o.next(1).Batch))
	o.next(0, o.fail("1", "x", 120*time.Second))
	two := job("2", "v", 1)
	two.PerformAt = e.at(60 * time.Second)
	e.enqueue(two)

	cases := []struct {
		order persistence.Order
		rev   bool
		want  []string
	}{
		{persistence.OrderID, false, []string{"1", "2"}},
		{persistence.OrderID, true, []string{"2", "1"}},
		{persistence.OrderPerformAt, false, []string{"2", "1"}},
		{persistence.OrderPerformAt, true, []string{"1", "2"}},
		{persistence.OrderRetryCount, false, []string{"2", "1"}},
		{persistence.OrderRetryCount, true, []string{"1", "2"}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, listIDs(t, e, persistence.ListOptions{Order: c.order, Rev: c.rev}), "%s rev=%v", c.order, c.rev)
	}
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderID})
	require.NoError(t, err)
	require.Equal(t, 0, page.Jobs[0].RetryCount)
	require.Equal(t, "x", page.Jobs[0].Error)
	require.True(t, page.Jobs[0].PerformAt.Equal(e.at(120*time.Second)))
	require.Empty(t, page.Next)
}

// Paging visits every job exactly once, in order, also through a band of
// equal scores larger than the page and while jobs leave between pages.
func testListingTies(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	var jobs []persistence.NewJob
	for i := range 250 {
		jobs = append(jobs, job(fmt.Sprintf("j%03d", i), "v", 1))
	}
	e.enqueue(jobs...) // one call: all share perform_at = now
	for _, order := range []persistence.Order{persistence.OrderPerformAt, persistence.OrderRetryCount, persistence.OrderID} {
		for _, rev := range []bool{false, true} {
			var seen []string
			cursor := ""
			for pages := 0; ; pages++ {
				require.Less(t, pages, 100)
				page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: order, Rev: rev, Limit: 7, Cursor: cursor, Payloads: 1})
				require.NoError(t, err)
				for _, j := range page.Jobs {
					seen = append(seen, j.ID)
				}
				if page.Next == "" {
					break
				}
				cursor = page.Next
			}
			require.Len(t, seen, 250, "%s rev=%v", order, rev)
			for i := range seen {
				want := fmt.Sprintf("j%03d", i)
				if rev {
					want = fmt.Sprintf("j%03d", 249-i)
				}
				require.Equal(t, want, seen[i], "%s rev=%v position %d", order, rev, i)
			}
		}
	}

	// Jobs fetched between pages (the cursor's own entry among them) do not
	// make the listing skip or repeat the others.
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 10})
	require.NoError(t, err)
	last := page.Jobs[9].ID
	o := e.own(persistence.ShardOf(last, 3))
	for {
		res := o.next(1)
		if ids(res.Batch)[0] == last {
			break
		}
	}
	rest := listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Limit: 1000, Cursor: page.Next})
	require.Len(t, rest, 240)
	for i, id := range rest {
		require.Equal(t, fmt.Sprintf("j%03d", i+10), id)
	}
}

// Bounds are inclusive, in both directions.
func testListingBounds(t *testing.T, h Harness) {
	e := newEnv(t, h, 2)
	for i := range 10 {
		j := job(fmt.Sprint("k", i), "v", 1)
		j.PerformAt = e.at(time.Duration(i) * time.Second)
		e.enqueue(j)
	}
	lo, hi := trimFloat(e.now()+3), trimFloat(e.now()+6)
	require.Equal(t, []string{"k3", "k4", "k5", "k6"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Min: lo, Max: hi}))
	require.Equal(t, []string{"k6", "k5", "k4", "k3"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Min: lo, Max: hi, Rev: true}))
	require.Equal(t, []string{"k2", "k3"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderID, Min: "k2", Max: "k3"}))
	require.Equal(t, []string{"k3", "k2"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderID, Min: "k2", Max: "k3", Rev: true}))
	require.Len(t, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderRetryCount, Min: "-1", Max: "-1"}), 10)
	require.Empty(t, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderRetryCount, Min: "0"}))
	require.Equal(t, []string{"k9", "k8"}, listIDs(t, e, persistence.ListOptions{Order: persistence.OrderPerformAt, Rev: true, Limit: 2}))
}

func testListingBadOptions(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	e.enqueue(job("a", "v", 1), job("b", "v", 1))
	page, err := e.s.ListJobs(e.ctx, e.queue, persistence.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)
	cases := []struct {
		opts  persistence.ListOptions
		field string
	}{
		{persistence.ListOptions{Order: "score"}, "order"},
		{persistence.ListOptions{Order: persistence.OrderUpdatedAt}, "order"},
		{persistence.ListOptions{Limit: -1}, "limit"},
		{persistence.ListOptions{Limit: persistence.MaxListLimit + 1}, "limit"},
		{persistence.ListOptions{Order: persistence.OrderPerformAt, Min: "yesterday"}, "min"},
		{persistence.ListOptions{Order: persistence.OrderPerformAt, Max: "NaN"}, "max"},
		{persistence.ListOptions{Order: persistence.OrderPerformAt, Min: "5", Max: "1"}, "min"},
		{persistence.ListOptions{Cursor: "%%%"}, "cursor"},
		{persistence.ListOptions{Cursor: "aGVsbG8"}, "cursor"},
		{persistence.ListOptions{Cursor: page.Next, Rev: true}, "cursor"},
		{persistence.ListOptions{Cursor: page.Next, Order: persistence.OrderPerformAt}, "cursor"},
		{persistence.ListOptions{Payloads: -2}, "payloads"},
	}
	for _, c := range cases {
		_, err := e.s.ListJobs(e.ctx, e.queue, c.opts)
		var fe *persistence.FieldError
		require.ErrorAs(t, err, &fe, "%+v", c.opts)
		require.Equal(t, c.field, fe.Field, "%+v", c.opts)
		require.ErrorIs(t, err, persistence.ErrInvalid)
	}
	_, err = e.s.ListJobs(e.ctx, "nope", persistence.ListOptions{})
	require.ErrorIs(t, err, persistence.ErrUnknownQueue)
	_, err = e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderPerformAt})
	require.ErrorAs(t, err, new(*persistence.FieldError))
}
