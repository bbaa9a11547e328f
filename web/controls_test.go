package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// docs/contract.md §6.3, §9: POST /api/v1/queues/{q}/pause and /resume
// answer {"paused": bool}, keep the state in the store, and show it in
// /api/v1/queues and /api/v1/stats; an unknown queue is 404.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	queue := func() apiv1.Queue {
		a := e.do("GET", "/api/v1/queues/q", "")
		require.Equal(t, http.StatusOK, a.status, a.body)
		var v apiv1.Queue
		require.NoError(t, json.Unmarshal([]byte(a.body), &v))
		return v
	}
	require.False(t, queue().Paused)

	a := e.do("POST", "/api/v1/queues/q/pause", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"paused": true}`, a.body)
	require.True(t, queue().Paused)
	ctl, err := e.store.Controls(e.ctx, "q")
	require.NoError(t, err)
	require.True(t, ctl[0].Paused)
	a = e.do("GET", "/api/v1/queues", "")
	require.Contains(t, a.body, `"paused":true`)
	a = e.do("GET", "/api/v1/stats", "")
	require.Contains(t, a.body, `"q":{"length":0,"morgue_length":0,"lag":0,"paused":true}`)

	a = e.do("POST", "/api/v1/queues/q/resume", "{}", "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"paused": false}`, a.body)
	require.False(t, queue().Paused)

	a = e.do("POST", "/api/v1/queues/nope/pause", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	a = e.do("POST", "/api/v1/queues/q/pause", `{"x": 1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/q/pause", "")
	require.Equal(t, http.StatusMethodNotAllowed, a.status, a.body)
}

// Config.SetPaused, when set, is what pause and resume call.
func TestPauseThroughTheNode(t *testing.T) {
	t.Parallel()
	var calls []bool
	var e *env
	e = newEnv(t, func(c *web.Config) {
		c.SetPaused = func(ctx context.Context, queue string, paused bool) error {
			calls = append(calls, paused)
			return e.store.SetPaused(ctx, queue, paused)
		}
	})
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/queues/q/pause", "").status)
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/queues/q/resume", "").status)
	require.Equal(t, []bool{true, false}, calls)
}

// docs/contract.md §6.3: GET /api/v1/periodic lists the node's periodic
// jobs with their last and next tick (an empty list without any).
func TestPeriodicList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("GET", "/api/v1/periodic", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"periodic": []}`, a.body)

	next := 1_700_000_060.0
	e = newEnv(t, func(c *web.Config) {
		c.Periodic = func(context.Context) ([]apiv1.Periodic, error) {
			return []apiv1.Periodic{{Name: "hb", Queue: "q", Schedule: "@every 1m", ID: "x", NextTick: &next}}, nil
		}
	})
	a = e.do("GET", "/api/v1/periodic", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"periodic": [{"name": "hb", "queue": "q", "schedule": "@every 1m", "id": "x", "last_tick": null, "next_tick": 1700000060}]}`, a.body)
}
