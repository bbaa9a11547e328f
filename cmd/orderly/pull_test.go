package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// pullConfig is a pull queue with a short lease and timeout.
const pullConfig = `
queues:
  - name: orders
    shards: 2
    batch_size: 4
    timeout: 3s
    retry: {policy: linear, base: 20ms}
    handler: {type: pull, lease: 1s}
`

// TestPullWorkerSurvivesNodeKill drains a pull queue with a Go pull worker
// loop over HTTP, SIGKILLs the node midway and restarts it on the same
// address: every payload is delivered, and each id's payloads arrive in
// score order (a redelivery repeats only what was not committed).
func TestPullWorkerSurvivesNodeKill(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	store := directStore(t, srv.Addr())
	ctx := context.Background()
	const ids, per = 12, 10
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: pullConfig})
	port := n.Port
	n.WaitReady()
	enqueue := func(from, to int) {
		for k := from; k < to; k++ {
			var jobs []persistence.NewJob
			for i := range ids {
				score := float64(k + 1)
				jobs = append(jobs, persistence.NewJob{ID: "id" + strconv.Itoa(i), Payload: []byte(strconv.Itoa(k)), Score: &score})
			}
			require.NoError(t, store.Enqueue(ctx, "orders", jobs))
		}
	}
	enqueue(0, per/2)

	var mu sync.Mutex
	var node = n
	got := map[string][]int{} // every delivery, in order
	seen := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			cur := node
			mu.Unlock()
			code, body, err := cur.Try("POST", "/api/v1/queues/orders/pull", []byte(`{"max_ids":4,"wait":1}`))
			if err != nil || code != 200 {
				time.Sleep(20 * time.Millisecond) // the node is down or has nothing
				continue
			}
			var l apiv1.PullLease
			if json.Unmarshal(body, &l) != nil {
				continue
			}
			mu.Lock()
			for _, j := range l.Jobs {
				for _, p := range j.Payloads {
					v, _ := strconv.Atoi(string(p.Data))
					got[j.ID] = append(got[j.ID], v)
					seen[j.ID+"/"+string(p.Data)] = true
				}
			}
			mu.Unlock()
			time.Sleep(30 * time.Millisecond) // work, so that the kill finds leases held
			_, _, _ = cur.Try("POST", "/api/v1/queues/orders/pull/"+l.Lease+"/answer", []byte(`{}`))
		}
	}
	for range 2 {
		wg.Go(worker)
	}
	defer func() { close(stop); wg.Wait() }()

	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	eventually(t, "a quarter delivered", func() bool { return count() >= ids*per/4 })
	n.Kill()
	t.Logf("killed the node with %d of %d payloads delivered", count(), ids*per)
	enqueue(per/2, per) // while no node runs
	n2 := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: pullConfig, HTTPPort: port})
	mu.Lock()
	node = n2
	mu.Unlock()
	require.Eventually(t, func() bool {
		if count() < ids*per {
			return false
		}
		for i := range ids {
			if _, err := store.GetJob(ctx, "orders", "id"+strconv.Itoa(i)); err == nil {
				return false
			}
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "all delivered and acknowledged")

	mu.Lock()
	defer mu.Unlock()
	for i := range ids {
		id := "id" + strconv.Itoa(i)
		var firsts []int
		for _, v := range got[id] {
			if !slices.Contains(firsts, v) {
				firsts = append(firsts, v)
			}
		}
		require.True(t, slices.IsSorted(firsts), "%s out of order: %v", id, got[id])
		require.Len(t, firsts, per, fmt.Sprint(got[id]))
	}
}

// TestPullWorkerToken: a node configured with a queue's worker_token lets
// that token pull its queue, and nothing else.
func TestPullWorkerToken(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	cfg := `
queues:
  - name: orders
    timeout: 4s
    handler: {type: pull, lease: 1s, worker_token: w-orders-secret}
  - name: other
    handler: {type: noop}
`
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg, Args: []string{"--http-token", "admin-secret"}})
	do := func(token, method, path, body string) int {
		req, err := http.NewRequest(method, n.HTTP+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusNoContent, do("w-orders-secret", "POST", "/api/v1/queues/orders/pull", `{"max_ids":1,"wait":0}`))
	require.Equal(t, http.StatusForbidden, do("w-orders-secret", "GET", "/api/v1/queues", ""))
	require.Equal(t, http.StatusForbidden, do("w-orders-secret", "POST", "/api/v1/queues/orders/jobs", `[{"id":"a"}]`))
	require.Equal(t, http.StatusForbidden, do("w-orders-secret", "POST", "/api/v1/queues/other/pull", `{"max_ids":1,"wait":0}`))
	require.Equal(t, http.StatusNotFound, do("admin-secret", "POST", "/api/v1/queues/other/pull", `{"max_ids":1,"wait":0}`))
	require.Equal(t, http.StatusNoContent, do("admin-secret", "POST", "/api/v1/queues/orders/pull", `{"max_ids":1,"wait":0}`))
	require.NotContains(t, n.Logs(), "w-orders-secret", "the token is redacted from the logged configuration")
}

// TestPullDeadReported runs a pull queue with a retries_exhausted_url
// (docs/contract.md §3.11): a worker answers one id dead and another
// failed with no retry left; both reach the URL, signed with the queue's
// secret, and the morgue holds them.
func TestPullDeadReported(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	dead := nodetest.NewReceiver(t, func(c *webhooktest.Call) webhooktest.Answer { return webhooktest.Answer{} })
	dead.RequireSignature([]byte("s3cret"), time.Minute)
	cfg := `
queues:
  - name: orders
    shards: 1
    batch_size: 2
    timeout: 4s
    max_retry_count: none
    handler: {type: pull, lease: 2s, secret: s3cret, retries_exhausted_url: "` + dead.URL + `"}
`
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n.WaitReady()
	enqueue(t, n, `[{"id":"poison","payload":"p"},{"id":"flaky","payload":"f"}]`)

	var win apiv1.PullLease
	eventually(t, "a window of both ids", func() bool {
		code, body := n.Do("POST", "/api/v1/queues/orders/pull", []byte(`{"max_ids":2,"wait":1}`))
		if code != http.StatusOK {
			return false
		}
		require.NoError(t, json.Unmarshal(body, &win))
		return len(win.Jobs) == 2
	})
	code, body := n.Do("POST", "/api/v1/queues/orders/pull/"+win.Lease+"/answer",
		[]byte(`{"dead":{"poison":"unknown product"},"failed":{"flaky":"502 from inventory"}}`))
	require.Equal(t, http.StatusOK, code, string(body))

	reported := func() map[string]string {
		got := map[string]string{}
		for _, c := range dead.Calls() {
			if c.Cut || c.Answer.Status != 0 {
				continue
			}
			require.NoError(t, c.SignatureErr)
			require.Equal(t, "orders", c.Request.Queue)
			for _, j := range c.Request.Jobs {
				got[j.ID] = j.Error
			}
		}
		return got
	}
	eventually(t, "both ids reported to the retries_exhausted_url", func() bool { return len(reported()) == 2 })
	require.Equal(t, map[string]string{"poison": "unknown product", "flaky": "502 from inventory"}, reported())
	eventually(t, "the morgue holds both", func() bool {
		_, body := n.Do("GET", "/api/v1/queues/orders", nil)
		var q apiv1.Queue
		return json.Unmarshal(body, &q) == nil && q.MorgueLength == 2
	})
}
