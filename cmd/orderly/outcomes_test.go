package main

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// TestWebhookOutcomes runs the binary with a webhook queue whose receiver
// answers "retry_in", "dead" and "discard" (docs/contract.md §3.11), and a
// retries_exhausted_url that refuses the first report: the dead id reaches
// it (again until it takes it), signed; the snoozed id comes back without
// a failure counted; the discarded one never again; the stats count them.
func TestWebhookOutcomes(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	var snoozed atomic.Bool
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		a := webhooktest.Answer{RetryIn: map[string]wire.Delay{}, Dead: map[string]string{}, Discard: map[string]string{}}
		for _, j := range c.Request.Jobs {
			switch j.ID {
			case "later":
				if snoozed.CompareAndSwap(false, true) {
					a.RetryIn[j.ID] = wire.Delay(300 * time.Millisecond)
				}
			case "poison":
				a.Dead[j.ID] = "unknown product"
			case "stale":
				a.Discard[j.ID] = "superseded"
			}
		}
		return a
	})
	var refused atomic.Int32
	dead := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer {
		if refused.Add(1) == 1 {
			return webhooktest.Answer{Status: 503}
		}
		return webhooktest.Answer{}
	})
	rcv.RequireSignature([]byte("s3cret"), time.Minute)
	dead.RequireSignature([]byte("s3cret"), time.Minute)
	cfg := strings.Replace(webhookConfig(rcv.URL, 5), "timeout: 10s}",
		`timeout: 10s, secret: s3cret, retries_exhausted_url: "`+dead.URL+`"}`, 1)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n.WaitReady()

	enqueue(t, n, `[{"id":"later","payload":"l"},{"id":"poison","payload":"p"},{"id":"stale","payload":"s"}]`)
	eventually(t, "the dead id reported to the retries_exhausted_url", func() bool {
		for _, c := range dead.Calls() {
			if !c.Cut && c.Answer.Status == 0 && len(c.Request.Jobs) == 1 && c.Request.Jobs[0].ID == "poison" {
				return true
			}
		}
		return false
	})
	calls := dead.Calls()
	require.GreaterOrEqual(t, len(calls), 2, "refused once, then taken")
	for _, c := range calls {
		require.NoError(t, c.SignatureErr)
		require.Equal(t, "orders", c.Request.Queue)
		require.Equal(t, "unknown product", c.Request.Jobs[0].Error)
		require.Equal(t, []string{`"p"`}, payloads(c.Request.Jobs[0]))
	}
	eventually(t, "later delivered again", func() bool { return len(rcv.JobsOf("later")) == 2 })
	again := rcv.JobsOf("later")[1]
	require.Equal(t, -1, again.RetryCount, "a snooze counts no failure")

	eventually(t, "the stats count the outcomes", func() bool {
		_, body := n.Do("GET", "/api/v1/queues", nil)
		var raw struct {
			Queues []map[string]any `json:"queues"`
		}
		if json.Unmarshal(body, &raw) != nil || len(raw.Queues) != 1 {
			return false
		}
		st := raw.Queues[0]
		return st["snoozed"] == 1.0 && st["discarded"] == 1.0 && st["morgue_length"] == 1.0 && st["processed"] == 1.0
	})
	require.Len(t, rcv.JobsOf("stale"), 1, "a discarded id is never delivered again")
	require.Len(t, rcv.JobsOf("poison"), 1, "a dead id is not retried")
}
