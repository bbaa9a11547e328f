package web_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web/apiv1"
)

// docs/contract.md §3.17: POST /api/v1/queues/{q}/reshard starts a reshard
// (202, its progress), again for its target is 202, another count while
// it runs 409; GET /api/v1/queues and /api/v1/queues/{q} show the target
// count in "shards" and the progress in "reshard". No node runs here, so
// the reshard stays running.
func TestReshard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d"}]`)
	queue := func() apiv1.Queue {
		a := e.do("GET", "/api/v1/queues/q", "")
		require.Equal(t, http.StatusOK, a.status, a.body)
		var v apiv1.Queue
		require.NoError(t, json.Unmarshal([]byte(a.body), &v))
		return v
	}
	before := queue()
	require.Nil(t, before.Reshard)
	require.Equal(t, testShards, before.Shards)

	json := []string{"Content-Type", "application/json"}
	a := e.do("POST", "/api/v1/queues/q/reshard", `{"shards": 5}`, json...)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	require.JSONEq(t, `{"from": 3, "to": 5, "moved": 0, "left": 4, "drained_shards": 0}`, a.body)
	shape, err := e.store.Shape(e.ctx, "q")
	require.NoError(t, err)
	require.True(t, shape.Resharding())
	require.Equal(t, 5, shape.Current.Count)

	v := queue()
	require.Equal(t, 5, v.Shards)
	require.Equal(t, &apiv1.Reshard{From: 3, To: 5, Left: 4}, v.Reshard)
	a = e.do("GET", "/api/v1/queues", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"shards":5,`)
	require.Contains(t, a.body, `"reshard":{"from":3,"to":5,"moved":0,"left":4,"drained_shards":0}`)

	a = e.do("POST", "/api/v1/queues/q/reshard", `{"shards": 5}`, json...)
	require.Equal(t, http.StatusAccepted, a.status, "asking again for the running target is idempotent: %s", a.body)
	a = e.do("POST", "/api/v1/queues/q/reshard", `{"shards": 2}`, json...)
	require.Equal(t, http.StatusConflict, a.status, a.body)
	msg, field := a.errorBody(t)
	require.Equal(t, "shards", field)
	require.Contains(t, msg, "from 3 to 5 shards")

	// Listings and lookups show the ids wherever they are.
	a = e.do("GET", "/api/v1/queues/q/jobs", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	for _, id := range []string{"a", "b", "c", "d"} {
		require.Contains(t, a.body, `"id":"`+id+`"`)
		g := e.do("GET", "/api/v1/queues/q/jobs/"+id, "")
		require.Equal(t, http.StatusOK, g.status, g.body)
	}
	// Changes to an id still in its old shard: 503, retry shortly.
	a = e.do("DELETE", "/api/v1/queues/q/jobs/a", "")
	require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	msg, _ = a.errorBody(t)
	require.Contains(t, msg, "resharded")
	// Enqueues still work.
	e.enqueue(`[{"id": "e"}]`)
}

// A bad count is 400 (as persistence.ValidateShards), an unknown queue 404,
// the queue's own count with no reshard running 200 and changes nothing.
func TestReshardRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	json := []string{"Content-Type", "application/json"}
	for _, body := range []string{`{"shards": 0}`, `{"shards": 4097}`, `{"shards": -1}`, `{"shards": "4"}`,
		`{"shards": 2.5}`, `{}`, `{"shards": 4, "x": 1}`, `[4]`, ``} {
		a := e.do("POST", "/api/v1/queues/q/reshard", body, json...)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", body, a.body)
		a.errorBody(t)
	}
	a := e.do("POST", "/api/v1/queues/nope/reshard", `{"shards": 4}`, json...)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	a = e.do("POST", "/api/v1/queues/q/reshard?x=1", `{"shards": 4}`, json...)
	require.Equal(t, http.StatusBadRequest, a.status, a.body)

	a = e.do("POST", "/api/v1/queues/q/reshard", `{"shards": 3}`, json...)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"from": 3, "to": 3, "moved": 0, "left": 0, "drained_shards": 0}`, a.body)
	shape, err := e.store.Shape(e.ctx, "q")
	require.NoError(t, err)
	require.False(t, shape.Resharding())
	a = e.do("GET", "/api/v1/queues/q", "")
	require.NotContains(t, a.body, `"reshard"`)
}
