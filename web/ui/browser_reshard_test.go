package ui_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/contract.md §3.17: a queue being resharded shows its progress on
// the overview's row and in the queue's header, and neither once it
// ended; the other queues show none. Its jobs are listed meanwhile.
func TestBrowserReshard(t *testing.T) {
	chromium(t)
	f := newFixtureTokens(t, "", "", false)
	b := newBrowser(t, f.ts.URL)

	b.open("/")
	b.waitFor(`document.querySelector('tr[data-queue="emails"] .badge.reshard')?.hidden === true`, "the emails row, without a reshard")

	_, err := f.store.Reshard(f.ctx, "emails", 3)
	require.NoError(t, err)
	st, err := f.store.ReshardStatus(f.ctx, "emails")
	require.NoError(t, err)
	want := fmt.Sprintf("resharding 2 \u2192 3: 0 moved, %d left", st.Left)
	b.waitFor(`document.querySelector('tr[data-queue="emails"] .badge.reshard')?.hidden === false`, "the overview's reshard badge")
	require.Equal(t, want, b.text(`tr[data-queue="emails"] .badge.reshard`))
	require.True(t, eval[bool](b, `document.querySelector('tr[data-queue="orders"] .badge.reshard').hidden`))

	b.open("/queues/emails/processing")
	b.waitFor(`document.querySelector('#queue-reshard')?.hidden === false`, "the header's reshard badge")
	require.Equal(t, want, b.text(`#queue-reshard`))
	require.Contains(t, eval[string](b, `document.querySelector('#queue-reshard').title`), "of 2 drained")
	b.screenshot("reshard")
	b.open("/queues/emails")
	b.waitFor(`document.querySelector('.job[data-id="mail-9"]')`, "a queued job, listed while the reshard runs")

	b.open("/queues/orders/processing")
	b.waitFor(`document.querySelector('#queue-reshard')?.hidden === true && document.querySelector('.qname')?.textContent === 'orders'`, "no badge on another queue")
}
