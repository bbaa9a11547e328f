package web_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/web"
)

// POST /api/v1/node/quiet and /resume call the node's Quiet and answer its
// state, which GET /api/v1/cluster shows too; a server without a node
// answers 404, a node that cannot change (stopping) 503, and with a token
// only the full one may call them.
func TestNodeQuietEndpoints(t *testing.T) {
	t.Parallel()
	var quiet atomic.Bool
	var fail atomic.Bool
	e := newEnv(t, func(c *web.Config) {
		c.Quiet = func(_ context.Context, q bool) error {
			if fail.Load() {
				return errors.New("node: not running")
			}
			quiet.Store(q)
			return nil
		}
		c.IsQuiet = quiet.Load
	})
	a := e.do("POST", "/api/v1/node/quiet", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"node": "", "quiet": true}`, a.body)
	require.True(t, quiet.Load())
	a = e.do("GET", "/api/v1/cluster", "")
	require.Contains(t, a.body, `"quiet":true`)
	a = e.do("POST", "/api/v1/node/resume", "{}")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"node": "", "quiet": false}`, a.body)
	a = e.do("POST", "/api/v1/node/resume", `{"x": 1}`)
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	fail.Store(true)
	a = e.do("POST", "/api/v1/node/quiet", "")
	require.Equal(t, http.StatusServiceUnavailable, a.status, a.body)

	plain := newEnv(t)
	a = plain.do("POST", "/api/v1/node/quiet", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)

	// With tokens: the full token only.
	fail.Store(false)
	locked := newEnv(t, func(c *web.Config) {
		c.Token, c.ReadToken = "full-token", "read-token"
		c.Quiet = func(_ context.Context, q bool) error { quiet.Store(q); return nil }
	})
	a = locked.do("POST", "/api/v1/node/quiet", "")
	require.Equal(t, http.StatusUnauthorized, a.status, a.body)
	a = locked.do("POST", "/api/v1/node/quiet", "", "Authorization", "Bearer read-token")
	require.Equal(t, http.StatusForbidden, a.status, a.body)
	a = locked.do("POST", "/api/v1/node/quiet", "", "Authorization", "Bearer full-token")
	require.Equal(t, http.StatusOK, a.status, a.body)
}
