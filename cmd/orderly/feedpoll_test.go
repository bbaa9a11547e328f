package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// TestFeedLongPollsLeaveTheNodeServing: 500 change-feed long polls wait on
// one node (as many as its http_max_feed_waits allows; one more is
// answered 429) while it processes jobs of another queue. The waiting reads
// must not take the Redis connections its leases, fetches and acks use:
// every job is processed, no shard changes epoch (no lease lost), and the
// node stays ready. A renewal stuck behind a waiting read would wait for its
// 30 s, so the default lease_ttl (3 s) shows it; a shorter one lost leases
// to a loaded machine's scheduling alone.
func TestFeedLongPollsLeaveTheNodeServing(t *testing.T) {
	const polls, jobs = 500, 300
	srv := redistest.NewServer(t, redistest.Options{})
	rcv := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	n := nodetest.Start(t, nodetest.Options{Redis: "redis://" + srv.Addr() + "/0", Config: fmt.Sprintf(`
node:
  http_max_feed_waits: %d
  lease_ttl: 3s
queues:
  - name: watched
    shards: 2
    state: true
    handler: {type: noop}
  - name: orders
    shards: 4
    handler: {type: http, url: %q, timeout: 5s}
`, polls, rcv.URL)})
	n.WaitReady()
	before := epochsOf(t, n, "orders")
	require.Len(t, before, 4)

	ctx, cancel := context.WithCancel(context.Background())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: polls + 10}}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{} // status -> poll answers, guarded by mu
	)
	get := func(ctx context.Context, wait string) (int, http.Header, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.HTTP+"/api/v1/queues/watched/feed?from=$&wait="+wait, nil)
		if err != nil {
			return 0, nil, err
		}
		res, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, res.Header, nil
	}
	for range polls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				code, _, err := get(ctx, "30s")
				if err == nil {
					mu.Lock()
					statuses[code]++
					mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		hc.CloseIdleConnections()
	})

	// Every slot is taken once one more long poll is refused.
	var refused http.Header
	require.Eventually(t, func() bool {
		code, h, err := get(context.Background(), "1ms")
		refused = h
		return err == nil && code == http.StatusTooManyRequests
	}, 60*time.Second, 20*time.Millisecond, "%d long polls wait on the node", polls)
	require.Equal(t, "1", refused.Get("Retry-After"))

	var body strings.Builder
	body.WriteString("[")
	for i := range jobs {
		if i > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"id": "o-%d", "payload": %d}`, i, i)
	}
	body.WriteString("]")
	code, out := n.Do(http.MethodPost, "/api/v1/queues/orders/jobs", []byte(body.String()))
	require.Equal(t, http.StatusAccepted, code, string(out))
	require.Eventually(t, func() bool {
		for i := range jobs {
			if len(rcv.JobsOf(fmt.Sprintf("o-%d", i))) == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "every job is processed while the long polls wait")

	code, out = n.Do(http.MethodGet, "/readyz", nil)
	require.Equal(t, http.StatusOK, code, string(out))
	require.Equal(t, before, epochsOf(t, n, "orders"), "no shard changed hands: no lease was lost")
	require.NotContains(t, n.Logs(), "shard lease lost")
	mu.Lock()
	defer mu.Unlock()
	for code, k := range statuses {
		// 429: a poll came back while the probe above held a slot.
		require.Contains(t, []int{http.StatusOK, http.StatusTooManyRequests}, code, "%d long polls answered %d", k, code)
	}
}

// epochsOf reads the epoch of each shard of queue from the node's cluster
// view, with its owner.
func epochsOf(t *testing.T, n *nodetest.Node, queue string) map[int]string {
	t.Helper()
	code, body := n.Do(http.MethodGet, "/api/v1/cluster", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var c apiv1.Cluster
	require.NoError(t, json.Unmarshal(body, &c))
	out := map[int]string{}
	for _, s := range c.Shards {
		if s.Queue == queue {
			out[s.Shard] = fmt.Sprintf("%s@%d", s.Owner, s.Epoch)
		}
	}
	return out
}
