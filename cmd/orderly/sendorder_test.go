package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
)

// Unscored payloads of one id sent in one HTTP request, then in a second
// one, reach the webhook in the order they were sent, not in byte order.
func TestUnscoredHTTPPayloadsKeepSendOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	rcv := nodetest.NewReceiver(t, nil)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: webhookConfig(rcv.URL, 2)})
	n.WaitReady()

	enqueue(t, n, `[{"id":"order-1","payload":"z-created"},{"id":"order-1","payload":"a-paid"},{"id":"order-1","payload":"m-shipped"}]`)
	enqueue(t, n, `[{"id":"order-1","payload":"c-delivered"},{"id":"order-1","payload":"b-closed"}]`)
	want := []string{`"z-created"`, `"a-paid"`, `"m-shipped"`, `"c-delivered"`, `"b-closed"`}
	var seen []string
	eventually(t, "every payload delivered", func() bool {
		seen = nil
		for _, c := range deliveriesOf(rcv, "order-1") {
			if c.End.IsZero() {
				return false
			}
			for _, j := range c.Request.Jobs {
				if j.ID == "order-1" {
					seen = append(seen, payloads(j)...)
				}
			}
		}
		return len(seen) >= len(want)
	})
	require.Equal(t, want, seen)
}
