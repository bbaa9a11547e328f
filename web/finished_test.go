package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// ackAll fetches every due job of queue q's shards and acknowledges it with
// retain_finished on, setting the given results.
func (e *env) ackAll(results map[string][]byte) {
	e.t.Helper()
	for sh := range testShards {
		lease, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "node-a", time.Minute)
		require.NoError(e.t, err)
		res, err := e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Fetch: 1000, NextSeq: 1, MaxRetryCount: 25, RetainFinished: time.Hour})
		require.NoError(e.t, err)
		if res.Batch != nil {
			_, err = e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 25,
				RetainFinished: time.Hour, Results: results})
			require.NoError(e.t, err)
		}
		require.NoError(e.t, e.store.ReleaseShard(e.ctx, lease))
	}
}

func (e *env) listFinished(query string) (apiv1.FinishedPage, answer) {
	e.t.Helper()
	a := e.do("GET", "/api/v1/queues/q/finished?"+query, "")
	require.Equal(e.t, http.StatusOK, a.status, "%s: %s", query, a.body)
	var p apiv1.FinishedPage
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	require.NoError(e.t, dec.Decode(&p), a.body)
	require.NotNil(e.t, p.Jobs, "jobs is [], never null")
	return p, a
}

// Finished ids (docs/contract.md §3.14): listed by finished_at, paged, and
// shown by the lookup with their result, as JSON or base64.
func TestFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, a := e.listFinished("")
	require.Equal(t, `{"jobs":[],"next":""}`+"\n", a.body)
	require.Empty(t, p.Jobs)

	e.enqueue(`[{"id": "a"}, {"id": "b"}, {"id": "c"}]`)
	e.ackAll(map[string][]byte{"a": []byte(`{"total":3}`), "b": {0, 0xff}})
	p, a = e.listFinished("limit=2")
	require.Len(t, p.Jobs, 2)
	require.NotEmpty(t, p.Next)
	require.Contains(t, a.body, `{"id":"a","finished_at":1700000000,"attempts":1,"error":"","result":{"total":3}}`)
	rest, _ := e.listFinished("limit=2&cursor=" + url.QueryEscape(p.Next))
	require.Len(t, rest.Jobs, 1)
	require.Empty(t, rest.Next)
	seen := map[string]bool{}
	for _, j := range append(p.Jobs, rest.Jobs...) {
		seen[j.ID] = true
	}
	require.Len(t, seen, 3)

	byID, _ := e.listFinished("order=id&rev=1")
	require.Equal(t, []string{"c", "b", "a"}, []string{byID.Jobs[0].ID, byID.Jobs[1].ID, byID.Jobs[2].ID})

	l, raw := e.get("b")
	require.Nil(t, l.Queued)
	require.NotNil(t, l.Finished)
	require.Contains(t, raw.body, `"finished":{"id":"b","finished_at":1700000000,"attempts":1,"error":"","result_base64":"AP8="}`)
	_, raw = e.get("c")
	require.Contains(t, raw.body, `"finished":{"id":"c","finished_at":1700000000,"attempts":1,"error":""}`, "no result set")

	for _, c := range []struct{ query, field string }{
		{"order=retry_count", "order"},
		{"min=abc", "min"},
		{"limit=0", "limit"},
		{"cursor=garbage!", "cursor"},
		{"nope=1", "nope"},
	} {
		a := e.do("GET", "/api/v1/queues/q/finished?"+c.query, "")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", c.query, a.body)
		_, field := a.errorBody(t)
		require.Equal(t, c.field, field, c.query)
	}
	a = e.do("GET", "/api/v1/queues/nope/finished", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)

	// An id that failed once, then finished: its attempt history.
	e.enqueue(`[{"id": "r"}]`)
	sh := persistence.ShardOf("r", testShards)
	lease, _, err := e.store.AcquireShard(e.ctx, persistence.ShardRef{Queue: "q", Shard: sh}, "node-a", time.Minute)
	require.NoError(t, err)
	_, err = e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Fetch: 1, NextSeq: 1, RetainFinished: time.Hour})
	require.NoError(t, err)
	_, err = e.store.Advance(e.ctx, lease, persistence.AdvanceRequest{Settle: 1, NextSeq: 2, MaxRetryCount: 25, RetainFinished: time.Hour,
		Failures: []persistence.Failure{{ID: "r", Error: "flaky"}}})
	require.NoError(t, err)
	require.NoError(t, e.store.ReleaseShard(e.ctx, lease))
	e.ackAll(nil)
	_, raw = e.get("r")
	require.Contains(t, raw.body, `"finished":{"id":"r","finished_at":1700000000,"attempts":2,"error":"flaky","errors":[{"at":1700000000,"error":"flaky"}]}`)
}
