package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/nodetest"
	"github.com/orderlyhq/orderly/internal/testing/redistest"
	"github.com/orderlyhq/orderly/web/apiv1"
	"github.com/orderlyhq/orderly/webhook/wire"
)

// pullNextConfig is a pull queue of one shard, batch 1, with a short
// lease.
const pullNextConfig = `
queues:
  - name: orders
    shards: 1
    batch_size: 1
    timeout: 4s
    retry: {policy: linear, base: 20ms}
    handler: {type: pull, lease: 1s}
`

// answered is the 200 body of an answer.
type answered struct {
	Accepted bool             `json:"accepted"`
	Lost     []string         `json:"lost"`
	Next     *apiv1.PullLease `json:"next"`
}

// pullStatsOf returns the node's pull stats of orders.
func pullStatsOf(t *testing.T, n *nodetest.Node) apiv1.PullQueue {
	t.Helper()
	code, body := n.Do("GET", "/api/v1/queues/orders", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var q apiv1.Queue
	require.NoError(t, json.Unmarshal(body, &q))
	require.NotNil(t, q.Pull, string(body))
	return *q.Pull
}

// TestPullAnswerNextLeaseFenced: a lease that an answer's "next" brings is
// served, fenced and answered like a pulled one: its id is held by it
// alone, a late answer of it is refused with 409 (and takes no next), and
// its id comes again to be acknowledged.
func TestPullAnswerNextLeaseFenced(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: pullNextConfig})
	n.WaitReady()
	enqueue(t, n, `[{"id":"a","payload":"1"},{"id":"b","payload":"2"}]`)

	var l1 apiv1.PullLease
	eventually(t, "a first lease", func() bool {
		code, body := n.Do("POST", "/api/v1/queues/orders/pull", []byte(`{"max_ids":1,"wait":1}`))
		return code == http.StatusOK && json.Unmarshal(body, &l1) == nil
	})
	require.Len(t, l1.Jobs, 1)

	// The answer brings the other id's lease.
	code, body := n.Do("POST", "/api/v1/queues/orders/pull/"+l1.Lease+"/answer", []byte(`{"next":{"max_ids":1,"wait":5}}`))
	require.Equal(t, http.StatusOK, code, string(body))
	var a1 answered
	require.NoError(t, json.Unmarshal(body, &a1))
	require.True(t, a1.Accepted)
	require.NotNil(t, a1.Next, "the next lease: %s", body)
	l2 := *a1.Next
	require.NotEqual(t, l1.Lease, l2.Lease)
	require.Len(t, l2.Jobs, 1)
	require.NotEqual(t, l1.Jobs[0].ID, l2.Jobs[0].ID, "the first id was acknowledged")
	held := l2.Jobs[0].ID

	// Held by the next lease, its id goes to no other pull.
	code, body = n.Do("POST", "/api/v1/queues/orders/pull", []byte(`{"max_ids":1,"wait":0.2}`))
	require.Equal(t, http.StatusNoContent, code, string(body))
	require.Equal(t, 1, pullStatsOf(t, n).HeldLeases)

	// A second answer of the first lease is refused and takes no next.
	code, body = n.Do("POST", "/api/v1/queues/orders/pull/"+l1.Lease+"/answer", []byte(`{"next":{"max_ids":1,"wait":0}}`))
	require.Equal(t, http.StatusConflict, code, string(body))
	require.NotContains(t, string(body), `"next"`)
	require.Equal(t, 1, pullStatsOf(t, n).HeldLeases)

	// Past its deadline the next lease's answer is refused: nothing
	// committed, no next taken.
	time.Sleep(time.Until(time.UnixMilli(int64(l2.Deadline*1000))) + 100*time.Millisecond)
	code, body = n.Do("POST", "/api/v1/queues/orders/pull/"+l2.Lease+"/answer", []byte(`{"next":{"max_ids":1,"wait":0}}`))
	require.Equal(t, http.StatusConflict, code, string(body))
	require.Contains(t, string(body), `"reason":"deadline passed"`)
	require.Equal(t, 0, pullStatsOf(t, n).HeldLeases, "a refused answer takes no lease")

	// The id comes again, failed by its lease's end, and is acknowledged.
	var l3 apiv1.PullLease
	eventually(t, "the id again", func() bool {
		code, body := n.Do("POST", "/api/v1/queues/orders/pull", []byte(`{"max_ids":1,"wait":1}`))
		return code == http.StatusOK && json.Unmarshal(body, &l3) == nil
	})
	require.Equal(t, held, l3.Jobs[0].ID)
	require.Equal(t, l2.Jobs[0].RetryCount+1, l3.Jobs[0].RetryCount, "failed once, by its lease's end")
	code, body = n.Do("POST", "/api/v1/queues/orders/pull/"+l3.Lease+"/answer", []byte(`{"next":{"max_ids":1,"wait":0.2}}`))
	require.Equal(t, http.StatusOK, code, string(body))
	var a3 answered
	require.NoError(t, json.Unmarshal(body, &a3))
	require.Nil(t, a3.Next, "nothing left to pull")
	eventually(t, "both ids done", func() bool {
		c1, _ := n.Do("GET", "/api/v1/queues/orders/jobs/a", nil)
		c2, _ := n.Do("GET", "/api/v1/queues/orders/jobs/b", nil)
		return c1 == http.StatusNotFound && c2 == http.StatusNotFound
	})
}

// countingTransport counts the pull worker's pulls and answers.
type countingTransport struct {
	pulls, answers atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/answer") {
		c.answers.Add(1)
	} else if strings.HasSuffix(r.URL.Path, "/pull") {
		c.pulls.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestPullWorkerNextAndStop drains part of a pull queue with a Go pull
// worker, whose answers bring its next leases (fewer pulls than answers),
// then stops it: no id was ever held twice at once, every lease it took
// was answered (the node holds none), and the rest of the queue waits
// untouched.
func TestPullWorkerNextAndStop(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Options{})
	cfg := strings.Replace(pullNextConfig, "shards: 1", "shards: 4", 1)
	n := nodetest.Start(t, nodetest.Options{Redis: srv.URL(), Config: cfg})
	n.WaitReady()
	const ids = 400
	var jobs []string
	for i := range ids {
		jobs = append(jobs, `{"id":"id`+strconv.Itoa(i)+`","payload":"x"}`)
	}
	enqueue(t, n, "["+strings.Join(jobs, ",")+"]")

	var mu sync.Mutex
	inHand := map[string]bool{}
	done := map[string]int{}
	var twice []string
	tr := &countingTransport{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w := &client.PullWorker{URL: n.HTTP, Queue: "orders", Concurrency: 3, Wait: time.Second,
		HTTPClient: &http.Client{Transport: tr},
		Handle: func(_ context.Context, js []wire.Job) (*wire.Answer, error) {
			mu.Lock()
			for _, j := range js {
				if inHand[j.ID] {
					twice = append(twice, j.ID)
				}
				inHand[j.ID] = true
			}
			mu.Unlock()
			time.Sleep(time.Millisecond) // work
			mu.Lock()
			for _, j := range js {
				delete(inHand, j.ID)
				done[j.ID]++
			}
			if len(done) >= ids/4 {
				stop() // stop midway, leases in hand
			}
			mu.Unlock()
			return nil, nil
		}}
	require.NoError(t, w.Run(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, twice, "ids held twice at once")
	require.GreaterOrEqual(t, len(done), ids/4)
	require.Less(t, len(done), ids, "stopped midway")
	for id, k := range done {
		require.Equal(t, 1, k, "%s delivered more than once", id)
	}
	require.Less(t, tr.pulls.Load(), tr.answers.Load(), "answers bring the next leases")
	st := pullStatsOf(t, n)
	require.Equal(t, 0, st.HeldLeases, "every lease taken was answered")
	require.Equal(t, 0, st.WaitingWorkers)
	// The rest waits, and a later worker drains it.
	rest := map[string]bool{}
	ctx2, stop2 := context.WithTimeout(context.Background(), time.Minute)
	defer stop2()
	w2 := &client.PullWorker{URL: n.HTTP, Queue: "orders", Concurrency: 2, Wait: 200 * time.Millisecond,
		Handle: func(_ context.Context, js []wire.Job) (*wire.Answer, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, j := range js {
				rest[j.ID] = true
				if len(rest)+len(done) >= ids {
					stop2()
				}
			}
			return nil, nil
		}}
	mu.Unlock()
	require.NoError(t, w2.Run(ctx2))
	mu.Lock()
	for id := range rest {
		require.Zero(t, done[id], "%s delivered again after its acknowledgement", id)
	}
	require.Len(t, rest, ids-len(done))
	require.Equal(t, 0, pullStatsOf(t, n).HeldLeases)
}
