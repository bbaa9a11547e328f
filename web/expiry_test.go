package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// docs/contract.md §3.15: expires_at (unix seconds) or expires_in (seconds,
// or a duration string, from the server's clock) are stored with the
// payload and shown by the one-job lookup and the listings; never as a
// header.
func TestEnqueueExpiryShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(`[
		{"id": "at", "expires_at": 1700000600.25},
		{"id": "in", "expires_in": 90},
		{"id": "in-text", "expires_in": "2m"},
		{"id": "past", "expires_at": 1},
		{"id": "hdr", "expires_in": 60, "headers": {"k": "v"}},
		{"id": "none"}
	]`)
	for id, want := range map[string]time.Time{
		"at":      time.UnixMilli(1700000600250),
		"in":      t0.Add(90 * time.Second),
		"in-text": t0.Add(2 * time.Minute),
		"past":    time.Unix(1, 0),
		"hdr":     t0.Add(time.Minute),
	} {
		l, _ := e.get(id)
		require.True(t, want.Equal(l.Queued.Payloads[0].ExpiresAt), "%s: %v, want %v", id, l.Queued.Payloads[0].ExpiresAt, want)
	}
	l, raw := e.get("hdr")
	require.Equal(t, map[string]string{"k": "v"}, l.Queued.Payloads[0].Headers)
	require.Contains(t, raw.body, `"headers":{"k":"v"},"expires_at":`)
	_, raw = e.get("at")
	require.Contains(t, raw.body, `"expires_at":1700000600.25}`)
	require.NotContains(t, raw.body, `"headers"`, "an expiry is not a header")
	_, raw = e.get("none")
	require.NotContains(t, raw.body, "expires_at")

	a := e.do("GET", "/api/v1/queues/q/jobs", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"expires_at":1700000600.25`)
}

// Both fields, bad values and out-of-range times reject the request and
// name the field.
func TestEnqueueExpiryBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, tc := range map[string]struct{ job, field, msg string }{
		"both":            {`"expires_at": 1700000600, "expires_in": 5`, "expires_in", "give expires_at or expires_in, not both"},
		"negative in":     {`"expires_in": -1`, "expires_in", "must not be negative"},
		"bad duration":    {`"expires_in": "soon"`, "expires_in", `"soon" is not a duration`},
		"negative at":     {`"expires_at": -5`, "expires_at", "out of range"},
		"at far":          {`"expires_at": 1e30`, "expires_at", "out of range"},
		"at not number":   {`"expires_at": "tomorrow"`, "expires_at", "number"},
		"given twice":     {`"expires_in": 1, "expires_in": 2`, "expires_in", "given more than once"},
		"in out of range": {`"expires_in": 1e30`, "expires_in", "out of range"},
	} {
		a := e.do("POST", "/api/v1/queues/q/jobs", `[{"id": "a"}, {"id": "b", `+tc.job+`}]`)
		require.Equal(t, http.StatusBadRequest, a.status, name)
		msg, field := a.errorBody(t)
		require.Equal(t, "jobs[1]."+tc.field, field, name)
		require.Contains(t, msg, tc.msg, name)
	}
	require.Equal(t, `{"total":{"length":0,"morgue_length":0,"lag":0},"by_worker":{"q":{"length":0,"morgue_length":0,"lag":0}}}`+"\n", e.stats())
}
