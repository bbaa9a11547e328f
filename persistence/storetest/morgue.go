package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// The morgue (docs/contract.md §3.8).

var morgueTests = []testCase{
	{"Rule8_MorgueListings", testMorgueListings, needNone},
	{"Rule8_MorgueMergeKeepsLowerScore", testMorgueMerge, needNone},
	{"Rule8_MorgueRequeueAndDelete", testMorgueRequeueDelete, needAdmin},
	{"Rule8_MorgueRetention", testMorgueRetention, needNone},
}

// docs/contract.md §3.8 and Lowkiq spec 34: the morgue by id and by
// updated_at, both directions, with bounds and pages.
func testMorgueListings(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	for _, id := range []string{"m2", "m1", "m3"} {
		toMorgue(e, id, job(id, "v", 1))
		e.clock.Advance(time.Second)
	}
	list := func(opts persistence.ListOptions) []string {
		page, err := e.s.ListMorgue(e.ctx, e.queue, opts)
		require.NoError(t, err)
		var out []string
		for _, m := range page.Entries {
			out = append(out, m.ID)
		}
		return out
	}
	require.Equal(t, []string{"m1", "m2", "m3"}, list(persistence.ListOptions{Order: persistence.OrderID}))
	require.Equal(t, []string{"m3", "m2", "m1"}, list(persistence.ListOptions{Order: persistence.OrderID, Rev: true}))
	require.Equal(t, []string{"m2", "m1", "m3"}, list(persistence.ListOptions{Order: persistence.OrderUpdatedAt}))
	require.Equal(t, []string{"m3", "m1", "m2"}, list(persistence.ListOptions{Order: persistence.OrderUpdatedAt, Rev: true}))
	require.Equal(t, []string{"m2", "m3"}, list(persistence.ListOptions{Order: persistence.OrderID, Min: "m2"}))
	require.Equal(t, []string{"m1"}, list(persistence.ListOptions{Order: persistence.OrderUpdatedAt,
		Min: trimFloat(e.now() - 2), Max: trimFloat(e.now() - 1.5)}))

	var seen []string
	cursor := ""
	for {
		page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{Order: persistence.OrderUpdatedAt, Limit: 1, Cursor: cursor})
		require.NoError(t, err)
		for _, m := range page.Entries {
			seen = append(seen, m.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	require.Equal(t, []string{"m2", "m1", "m3"}, seen)
}

// Lowkiq spec 34: an id morgued again merges: updated_at moves, an equal
// payload keeps the lower score.
func testMorgueMerge(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "1", job("1", "v1", 10))
	e.clock.Advance(time.Second)
	toMorgue(e, "1", job("1", "v1", 20), job("1", "v0", 30))
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, []string{"v1@10"}, pl(page.Entries[0].Payloads))
	require.True(t, page.Entries[0].UpdatedAt.Equal(e.clock.Now()))
	// v0@30 survived the second morgue move and is queued.
	require.Equal(t, []string{"v0@30"}, pl(e.get("1").Payloads))
}

// docs/contract.md §3.8: requeue and delete, given ids or all.
func testMorgueRequeueDelete(t *testing.T, h Harness) {
	e := newEnv(t, h, 3)
	for i := range 12 {
		id := fmt.Sprintf("m%02d", i)
		toMorgue(e, id, job(id, "v", float64(i)))
	}
	require.EqualValues(t, 12, e.stats().MorgueLength)
	n, err := e.admin().DeleteMorgue(e.ctx, e.queue, []string{"m00", "m01", "nope"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = e.admin().RequeueMorgue(e.ctx, e.queue, []string{"m02"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NotNil(t, e.get("m02"))
	n, err = e.admin().RequeueMorgueAll(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 9, n)
	st := e.stats()
	require.EqualValues(t, 0, st.MorgueLength)
	require.EqualValues(t, 10, st.Length)

	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		toMorgue(e, id, job(id, "v", 1))
	}
	n, err = e.admin().DeleteMorgueAll(e.ctx, e.queue)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.EqualValues(t, 0, e.stats().MorgueLength)
}

// docs/contract.md §3.8: retention deletes entries last updated before the
// cut-off.
func testMorgueRetention(t *testing.T, h Harness) {
	e := newEnv(t, h, 1)
	toMorgue(e, "old", job("old", "v", 1))
	e.clock.Advance(48 * time.Hour)
	toMorgue(e, "new", job("new", "v", 1))
	ref := persistence.ShardRef{Queue: e.queue, Shard: 0}
	n, err := e.s.TrimMorgue(e.ctx, ref, e.at(-24*time.Hour), 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	page, err := e.s.ListMorgue(e.ctx, e.queue, persistence.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "new", page.Entries[0].ID)
}
