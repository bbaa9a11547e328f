package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/cmd/internal/chaos"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// TestEmitsRelayedAfterOwnerKilled SIGKILLs a node that committed emits
// with its acks but never relayed them (a chaos build with its relay
// held), and starts another: the new owner relays the outboxes, and every
// emitted job reaches its target queue's handler exactly once
// (docs/contract.md §11: the next owner relays what is left).
func TestEmitsRelayedAfterOwnerKilled(t *testing.T) {
	t.Parallel()
	const n = 20
	srv := redistest.NewServer(t, redistest.Options{AOF: true})
	emitter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type emit struct {
			From    string          `json:"from"`
			Queue   string          `json:"queue"`
			ID      string          `json:"id"`
			Payload json.RawMessage `json:"payload"`
		}
		var ans struct {
			Emit []emit `json:"emit"`
		}
		for _, j := range req.Jobs {
			ans.Emit = append(ans.Emit, emit{From: j.ID, Queue: "notify", ID: "n-" + j.ID, Payload: json.RawMessage(`{"from":"` + j.ID + `"}`)})
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	defer emitter.Close()
	notify := nodetest.NewReceiver(t, func(*webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	cfg := fmt.Sprintf(`
queues:
  - name: orders
    shards: 2
    batch_size: 5
    handler: {type: http, url: %q, timeout: 10s}
  - name: notify
    shards: 2
    batch_size: 5
    handler: {type: http, url: %q, timeout: 10s}
`, emitter.URL, notify.URL)

	held := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Chaos: true,
		Env: []string{chaos.HoldRelayEnv + "=1"}, Args: []string{"--lease-ttl", "1s"}})
	held.WaitReady()
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf(`{"id":"o-%d","payload":"p"}`, i)
	}
	enqueue(t, held, "["+strings.Join(jobs, ",")+"]")

	rdb := srv.Client(t)
	ctx := context.Background()
	waiting := func() int64 {
		var sum int64
		for sh := range 2 {
			sum += rdb.XLen(ctx, fmt.Sprintf("orderly:{orders:%d}:2:outbox", sh)).Val()
		}
		return sum
	}
	eventually(t, "every emit committed to the outboxes", func() bool { return waiting() == n })
	require.Empty(t, notify.Calls(), "nothing relayed while the relay is held")
	eventually(t, "the relay tried and failed", func() bool { return strings.Contains(held.Logs(), "relaying emits failed") })
	held.Kill()

	next := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Args: []string{"--lease-ttl", "1s"}})
	eventually(t, "every emit handled", func() bool {
		for i := range n {
			if len(notify.JobsOf(fmt.Sprintf("n-o-%d", i))) == 0 {
				return false
			}
		}
		return true
	})
	eventually(t, "the outboxes emptied", func() bool { return waiting() == 0 })
	next.WaitReady()
	for i := range n {
		got := notify.JobsOf(fmt.Sprintf("n-o-%d", i))
		require.Len(t, got, 1, "n-o-%d handled once", i)
		require.Equal(t, []string{fmt.Sprintf(`{"from":"o-%d"}`, i)}, payloads(got[0]))
	}
}
