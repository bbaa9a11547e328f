package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// overrunCall is one delivery as a receiver that ignores Orderly-Deadline
// saw it: its ids, the deadline it carried, and when the receiver started
// and finished working on it (not when the node gave it up).
type overrunCall struct {
	ids        []string
	deadline   time.Time
	start, end time.Time
}

// A receiver that ignores Orderly-Deadline and keeps working 90% past the
// timeout does not overlap its own retry on a healthy node: the retry of a
// timed-out call is due no earlier than its start plus twice the timeout,
// although the retry policy (linear, 300ms) would bring it back at 1.3 s
// (docs/contract.md §2.1). Every id of the timed-out call (one call
// carries a batch of three) waits so. So does what is left of an id whose
// retries the timeout exhausted (no retries: the lowest payload goes to
// the morgue, the other would be due at once). Checked from the receiver's
// own record: per id, each call starts after the previous one ended, and
// no earlier than the previous call's Orderly-Deadline plus the timeout.
func TestTimedOutCallIsNotRetriedWhileItsReceiverMayRun(t *testing.T) {
	t.Parallel()
	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		testOverrun(t, "retry: {policy: linear, base: 300ms}",
			`[{"id":"a","payload":1},{"id":"b","payload":2},{"id":"c","payload":3}]`)
	})
	t.Run("retries exhausted", func(t *testing.T) {
		t.Parallel()
		testOverrun(t, "max_retry_count: none",
			`[{"id":"a","payload":1},{"id":"a","payload":2},{"id":"b","payload":3},{"id":"b","payload":4},{"id":"c","payload":5},{"id":"c","payload":6}]`)
	})
}

// testOverrun runs a node whose queue (with the given retry settings)
// is handled by a receiver that works 1.9 s on its first call, ignoring
// its 1 s deadline, enqueues jobs and checks the receiver's record.
func testOverrun(t *testing.T, retry, jobs string) {
	const timeout = time.Second
	var mu sync.Mutex // guards calls
	var calls []overrunCall
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := overrunCall{start: time.Now()}
		c.deadline, _ = wire.Deadline(r)
		var req wire.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, j := range req.Jobs {
			c.ids = append(c.ids, j.ID)
		}
		mu.Lock()
		i := len(calls)
		calls = append(calls, c) // seen at once, end zero until answered
		mu.Unlock()
		if i == 0 {
			// Ignores the deadline and the closed connection alike.
			time.Sleep(timeout * 19 / 10)
		}
		mu.Lock()
		calls[i].end = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)

	srv := redistest.NewServer(t, redistest.Options{})
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: `
queues:
  - name: orders
    shards: 1
    batch_size: 10
    ` + retry + `
    handler: {type: http, url: "` + rcv.URL + `/perform", timeout: 1s}
`})
	n.WaitReady()
	enqueue(t, n, jobs)

	answered := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range calls {
			if c.end.IsZero() {
				return false
			}
		}
		return true
	}
	seen := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		got := map[string]int{}
		for _, c := range calls {
			for _, id := range c.ids {
				got[id]++
			}
		}
		return got
	}
	eventually(t, "each id called at least twice (the timed-out call and its retry), every call answered", func() bool {
		got := seen()
		return got["a"] >= 2 && got["b"] >= 2 && got["c"] >= 2 && answered()
	})

	mu.Lock()
	defer mu.Unlock()
	byID := map[string][]overrunCall{}
	for _, c := range calls {
		require.False(t, c.deadline.IsZero(), "every call carries Orderly-Deadline")
		for _, id := range c.ids {
			byID[id] = append(byID[id], c)
		}
	}
	for _, c := range calls {
		t.Logf("call %v: start %s, end %s, deadline %s", c.ids, c.start.Format("15:04:05.000"), c.end.Format("15:04:05.000"), c.deadline.Format("15:04:05.000"))
	}
	for id, cs := range byID {
		sort.Slice(cs, func(i, j int) bool { return cs[i].start.Before(cs[j].start) })
		for i := 1; i < len(cs); i++ {
			prev, next := cs[i-1], cs[i]
			require.False(t, next.start.Before(prev.end), "%s: the retry started %s before the receiver finished the timed-out call", id, prev.end.Sub(next.start))
			require.False(t, next.start.Before(prev.deadline.Add(timeout)), "%s: the retry started %s after the call's deadline, not a timeout later", id, next.start.Sub(prev.deadline))
		}
	}
}
