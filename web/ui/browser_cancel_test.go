package ui_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
)

// TestBrowserCancelAndQuiet drives the job view's Cancel button
// (docs/contract.md §3.13) on a queued id (to the morgue) and on an id in
// flight with "drop" checked (marked in flight, nothing queued left), and
// the cluster view's control that quiets and resumes the answering node.
func TestBrowserCancelAndQuiet(t *testing.T) {
	chromium(t)
	var quiet atomic.Bool
	f := newFixtureTokens(t, "", "", false, fixtureOption{config: func(c *web.Config) {
		c.Quiet = func(_ context.Context, q bool) error {
			quiet.Store(q)
			return nil
		}
		c.IsQuiet = quiet.Load
	}})
	b := newBrowser(t, f.ts.URL)

	later := time.Now().Add(time.Hour)
	require.NoError(t, f.store.Enqueue(f.ctx, "orders", []persistence.NewJob{
		{ID: "cx-1", Payload: []byte(`1`), PerformAt: later},
	}))
	b.open("/queues/orders/job?id=cx-1")
	b.waitFor(`document.querySelector('#cancel-job')`, "the cancel button")
	b.click(`#cancel-job`)
	b.waitFor(`document.querySelector('#confirm-dialog')?.open`, "the confirmation")
	require.Equal(t, "Cancel this job?", b.text(`#confirm-dialog h2`))
	b.click(`#confirm-ok`)
	b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent === 'Cancelled job cx-1: 1 queued payload to the morgue')`, "the answer")
	// Nothing is queued: the page shows what is left of the id, its
	// morgue entry.
	b.waitFor(`document.querySelector('[data-record="morgue"]')`, "the morgue entry")
	require.Contains(t, b.text(`[data-record="morgue"]`), "cancelled")
	page, err := f.store.ListMorgue(f.ctx, "orders", persistence.ListOptions{Min: "cx-1", Max: "cx-1"})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "cancelled", page.Entries[0].Error)

	// mail-1 is in flight at node-b (the fixture): cancel it, dropping.
	b.open("/queues/emails/job?id=mail-1")
	b.waitFor(`document.querySelector('#cancel-job')`, "the cancel button")
	b.click(`#cancel-job`)
	b.waitFor(`document.querySelector('#confirm-dialog')?.open`, "the confirmation")
	b.click(`#cancel-delete`)
	b.click(`#confirm-ok`)
	b.waitFor(`[...document.querySelectorAll('.toast')].some(e => e.textContent.endsWith('call in flight stopped'))`, "the answer")
	info, err := f.store.GetJob(f.ctx, "emails", "mail-1")
	require.NoError(t, err)
	require.Nil(t, info.Queued)
	require.NotNil(t, info.InFlight, "the call holds it until its settle")

	// Quiet and resume the answering node.
	b.open("/cluster")
	b.waitText(`#node-state`, "node-a: serving")
	b.click(`#node-quiet`)
	b.waitFor(`document.querySelector('#confirm-dialog')?.open`, "the confirmation")
	b.click(`#confirm-ok`)
	b.waitText(`#node-state`, "node-a: quiet")
	require.True(t, quiet.Load())
	b.click(`#node-quiet`)
	b.waitText(`#node-state`, "node-a: serving")
	require.False(t, quiet.Load())
}
