package pull_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// §6.6: a pull answer means what a webhook answer means, ids not named
// succeed; the node commits each id's outcome.
func TestPullPullAnswerCommitsEachOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	jobs := []client.Job{{ID: "fail", Payload: []byte(`1`)}, {ID: "later", Payload: []byte(`2`)},
		{ID: "dead", Payload: []byte(`3`)}, {ID: "drop", Payload: []byte(`4`)}, {ID: "done", Payload: []byte(`5`)}}
	require.NoError(t, e.client.Enqueue(ctx, "q", jobs...)) // one enqueue: one window of five ids
	l := e.pullSome(adminToken, "q", 5)
	require.ElementsMatch(t, []string{"fail", "later", "dead", "drop", "done"}, ids(l))
	require.Greater(t, l.Deadline, float64(time.Now().Unix()-1))
	status, out := e.answer(adminToken, "q", l.Lease,
		`{"failed":{"fail":"boom"},"retry_in":{"later":3600},"dead":{"dead":"bad"},"discard":{"drop":"no"}}`)
	require.Equal(t, http.StatusOK, status, out)

	require.Eventually(t, func() bool {
		_, err := e.store.GetJob(ctx, "q", "done")
		return err != nil
	}, 10*time.Second, 10*time.Millisecond)
	_, err := e.store.GetJob(ctx, "q", "done")
	require.ErrorIs(t, err, persistence.ErrNotFound, "acknowledged: gone")
	info, err := e.store.GetJob(ctx, "q", "fail")
	require.NoError(t, err)
	require.NotNil(t, info.Queued)
	require.Equal(t, 0, info.Queued.RetryCount)
	require.Equal(t, "boom", info.Queued.Error)
	info, err = e.store.GetJob(ctx, "q", "later")
	require.NoError(t, err)
	require.NotNil(t, info.Queued)
	require.Equal(t, persistence.FreshRetryCount, info.Queued.RetryCount, "a snooze counts no failure")
	info, err = e.store.GetJob(ctx, "q", "dead")
	require.NoError(t, err)
	require.NotNil(t, info.Morgue)
	_, err = e.store.GetJob(ctx, "q", "drop")
	require.ErrorIs(t, err, persistence.ErrNotFound, "discarded")

	// The lease is used up: a second answer commits nothing.
	status, out = e.answer(adminToken, "q", l.Lease, `{}`)
	require.Equal(t, http.StatusConflict, status, out)
}

// §6.6: nothing within wait is a 204; bad pulls are 400; a lease nobody
// holds is 409 "unknown lease".
func TestPullPullEmptyAndBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Nil(t, e.pull(adminToken, "q", 5, 0.05))
	require.Nil(t, e.pull(adminToken, "q", 5, 0))
	for _, body := range []string{`{"max_ids":0,"wait":1}`, `{"max_ids":5,"wait":31}`, `{"max_ids":5,"wait":-1}`,
		`{"max_ids":4,"wait":1}`, `{"max_ids":5,"wait":1,"x":1}`, `[]`} {
		status, out := e.do(adminToken, "POST", "/api/v1/queues/q/pull", body)
		require.Equal(t, http.StatusBadRequest, status, body+": "+out)
	}
	status, out := e.do(adminToken, "POST", "/api/v1/queues/nope/pull", `{"max_ids":5,"wait":0}`)
	require.Equal(t, http.StatusNotFound, status, out)
	status, out = e.answer(adminToken, "q", "0123", `{}`)
	require.Equal(t, http.StatusConflict, status, out)
	var c apiv1.PullConflict
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Equal(t, "unknown lease", c.Reason)
	status, out = e.do(adminToken, "POST", "/api/v1/queues/q/pull/0123/extend", `{"by":1}`)
	require.Equal(t, http.StatusConflict, status, out)
}

// §6.6: an answer after the lease's deadline commits nothing, says so,
// and the id comes back (a failure, as a timed-out call's).
func TestPullLateAnswerCommitsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.client.Enqueue(ctx, "slow", client.Job{ID: "x", Payload: []byte(`"p"`)}))
	l := e.pullSome(adminToken, "slow", 1)
	require.Equal(t, []string{"x"}, ids(l))
	time.Sleep(time.Until(time.UnixMilli(int64(l.Deadline*1000))) + 50*time.Millisecond) // past the deadline
	status, out := e.answer(adminToken, "slow", l.Lease, `{"dead":{"x":"late"}}`)
	require.Equal(t, http.StatusConflict, status, out)
	var c apiv1.PullConflict
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Equal(t, "deadline passed", c.Reason)

	again := e.pullSome(adminToken, "slow", 1)
	require.Equal(t, []string{"x"}, ids(again))
	require.Equal(t, 0, again.Jobs[0].RetryCount, "the expired lease failed it once")
	info, err := e.store.GetJob(ctx, "slow", "x")
	require.NoError(t, err)
	require.Nil(t, info.Morgue, "the late dead answer was not committed")
	status, out = e.answer(adminToken, "slow", again.Lease, `{}`)
	require.Equal(t, http.StatusOK, status, out)
}

// §6.6: extend moves the deadline, within the call's bound.
func TestPullExtendMovesTheDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.client.Enqueue(ctx, "slow", client.Job{ID: "x"}))
	l := e.pullSome(adminToken, "slow", 1)
	status, out := e.do(adminToken, "POST", "/api/v1/queues/slow/pull/"+l.Lease+"/extend", `{"by":1.5}`)
	require.Equal(t, http.StatusOK, status, out)
	var d apiv1.PullDeadline
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Greater(t, d.Deadline, l.Deadline)
	// Past the first deadline, within the extended one: still valid.
	time.Sleep(time.Until(time.UnixMilli(int64(l.Deadline*1000))) + 50*time.Millisecond)
	status, out = e.do(adminToken, "POST", "/api/v1/queues/slow/pull/"+l.Lease+"/extend", `{"by":3600}`)
	require.Equal(t, http.StatusOK, status, out)
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Less(t, d.Deadline, float64(time.Now().Add(5*time.Second).Unix()), "never past the call's deadline (timeout 4s)")
	status, out = e.do(adminToken, "POST", "/api/v1/queues/slow/pull/"+l.Lease+"/extend", `{"by":0}`)
	require.Equal(t, http.StatusBadRequest, status, out)
	status, out = e.answer(adminToken, "slow", l.Lease, ``)
	require.Equal(t, http.StatusOK, status, out)
	require.Eventually(t, func() bool {
		_, err := e.store.GetJob(ctx, "slow", "x")
		return err != nil
	}, 10*time.Second, 10*time.Millisecond)
}

// §6.6: a worker token opens only its queue's pull routes.
func TestPullWorkerTokenScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Nil(t, e.pull(workerToken, "q", 5, 0))
	status, out := e.answer(workerToken, "q", "abc", `{}`)
	require.Equal(t, http.StatusConflict, status, out, "its queue's answer route is open")
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/queues/many/pull", `{"max_ids":1,"wait":0}`},
		{"POST", "/api/v1/queues/many/pull/abc/answer", `{}`},
		{"GET", "/api/v1/queues", ""},
		{"GET", "/api/v1/queues/q/jobs", ""},
		{"POST", "/api/v1/queues/q/jobs", `[{"id":"a"}]`},
		{"POST", "/api/v1/queues/q/pull/abc/other", `{}`},
	} {
		status, out := e.do(workerToken, r.method, r.path, r.body)
		require.Equal(t, http.StatusForbidden, status, r.method+" "+r.path+": "+out)
	}
	status, _ = e.do("wrong", "POST", "/api/v1/queues/q/pull", `{"max_ids":5,"wait":0}`)
	require.Equal(t, http.StatusUnauthorized, status)
}

// §6.6: at most one worker holds an id: concurrent pullers never hold one
// id at once, and each id's payloads arrive in order, each once.
func TestPullConcurrentPullersNeverShareAnID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const ids, per = 6, 8
	for k := range per {
		var batch []client.Job
		for i := range ids {
			batch = append(batch, client.Job{ID: "id" + strconv.Itoa(i), Payload: []byte(strconv.Itoa(k)),
				Score: client.Score(float64(k + 1))})
		}
		require.NoError(t, e.client.Enqueue(ctx, "many", batch...))
	}
	var mu sync.Mutex
	held := map[string]bool{}
	got := map[string][]string{}
	total := 0
	var overlap []string
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				mu.Lock()
				finished := total >= ids*per
				mu.Unlock()
				if finished {
					return
				}
				l := e.pull(adminToken, "many", 3, 0.2) // up to 3 calls of different shards
				if l == nil {
					continue
				}
				mu.Lock()
				for _, j := range l.Jobs {
					if held[j.ID] {
						overlap = append(overlap, j.ID)
					}
					held[j.ID] = true
					for _, p := range j.Payloads {
						got[j.ID] = append(got[j.ID], string(p.Data))
						total++
					}
				}
				mu.Unlock()
				mu.Lock()
				for _, j := range l.Jobs {
					held[j.ID] = false
				}
				mu.Unlock()
				if status, out := e.answer(adminToken, "many", l.Lease, `{}`); status != http.StatusOK {
					t.Errorf("answer: %d %s", status, out)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, overlap)
	want := make([]string, per)
	for k := range per {
		want[k] = strconv.Itoa(k)
	}
	for i := range ids {
		require.Equal(t, want, got["id"+strconv.Itoa(i)], fmt.Sprint(got))
	}
	require.Equal(t, ids*per, total)
}

// §6.6: a stopping broker ends waiting pulls with 204 and refuses new
// ones with 503.
func TestPullStopEndsPulls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := make(chan *apiv1.PullLease, 1)
	go func() { done <- e.pull(adminToken, "q", 5, 25) }()
	require.Eventually(t, func() bool { return e.broker.Stats()["q"].Waiting == 1 }, 10*time.Second, 5*time.Millisecond)
	status, out := e.do(adminToken, "GET", "/api/v1/queues/q", "")
	require.Equal(t, http.StatusOK, status, out)
	var q apiv1.Queue
	require.NoError(t, json.Unmarshal([]byte(out), &q))
	require.Equal(t, &apiv1.PullQueue{WaitingWorkers: 1}, q.Pull)
	e.broker.Stop()
	require.Nil(t, <-done)
	status, out = e.do(adminToken, "POST", "/api/v1/queues/q/pull", `{"max_ids":5,"wait":1}`)
	require.Equal(t, http.StatusServiceUnavailable, status, out)
}
