package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

func stateful(queues map[string]int) option {
	return func(c *web.Config) { c.StateQueues = queues }
}

// GET and PUT /api/v1/queues/{q}/state/{id}: read, compare-and-set (409 on
// a stale version), base64 for bytes that are not JSON, null deletes, 404
// for a queue that is not stateful; the job lookup shows the state.
func TestStateEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, stateful(map[string]int{"q": 16}))
	e.register("plain", 1)

	a := e.do("GET", "/api/v1/queues/q/state/a%2Fb", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"state": null, "version": 0}`, a.body)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": {"n": 1}, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"version": 1}`, a.body)
	a = e.do("GET", "/api/v1/queues/q/state/a/b", "")
	require.JSONEq(t, `{"state": {"n":1}, "version": 1}`, a.body)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": 2, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusConflict, a.status, a.body)
	_, field := a.errorBody(t)
	require.Equal(t, "version", field)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state_base64": "AP8=", "version": 1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/q/state/a%2Fb", "")
	require.JSONEq(t, `{"state_base64": "AP8=", "version": 2}`, a.body)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": "0123456789abcdefghij", "version": 2}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	_, field = a.errorBody(t)
	require.Equal(t, "state", field)

	for _, bad := range []string{`{"state": 1}`, `{"version": 2}`, `{"state": 1, "state_base64": "AA==", "version": 2}`, `[]`} {
		a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", bad, "Content-Type", "application/json")
		require.Equal(t, http.StatusBadRequest, a.status, bad)
	}

	e.enqueue(`[{"id": "a/b"}]`)
	look, a := e.get("a/b")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NotNil(t, look.State)
	require.Equal(t, int64(2), look.State.Version)
	require.Equal(t, []byte{0, 0xff}, look.State.Data)

	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": null, "version": 2}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"version": 3}`, a.body, "a delete keeps the version counting")
	a = e.do("GET", "/api/v1/queues/q/state/a%2Fb", "")
	require.JSONEq(t, `{"state": null, "version": 3, "deleted": true}`, a.body)
	a = e.do("PUT", "/api/v1/queues/q/state/a%2Fb", `{"state": 1, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusConflict, a.status, a.body)

	for _, q := range []string{"plain", "nope"} {
		a = e.do("GET", "/api/v1/queues/"+q+"/state/x", "")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		a = e.do("PUT", "/api/v1/queues/"+q+"/state/x", `{"state": 1, "version": 0}`, "Content-Type", "application/json")
		require.Equal(t, http.StatusNotFound, a.status, a.body)
	}
}

// PUT /api/v1/queues/{q}/state/{id} reads its body as strictly as an
// enqueue body: unknown fields (also a name in another case), a field
// given twice and names or base64 strings that are not valid UTF-8 are
// answered 400 naming the field, and nothing is written.
func TestStateWriteIsStrict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, stateful(map[string]int{"q": 0}))
	put := func(body string) answer {
		t.Helper()
		return e.do("PUT", "/api/v1/queues/q/state/s1", body, "Content-Type", "application/json")
	}
	a := put(`{"state": {"n": 1}, "version": 0}`)
	require.Equal(t, http.StatusOK, a.status, a.body)

	for _, tc := range []struct{ name, body, field, msg string }{
		{"unknown field", `{"state": 2, "version": 1, "extra": true}`, "extra", "unknown field"},
		{"another case", `{"state": 2, "VERSION": 1}`, "VERSION", "unknown field"},
		{"version twice", `{"state": 2, "version": 0, "version": 1}`, "version", "given more than once"},
		{"state twice", `{"state": 2, "state": 3, "version": 1}`, "state", "given more than once"},
		{"name not UTF-8", "{\"state\": 2, \"version\": 1, \"x\xff\": 1}", "x\ufffd", "unknown field"}, // as the JSON answer writes it
		{"base64 not UTF-8", "{\"state_base64\": \"AA\xff==\", \"version\": 1}", "state_base64", "not valid UTF-8"},
		{"version not an integer", `{"state": 2, "version": 1.5}`, "version", "integer"},
		{"version negative", `{"state": 2, "version": -1}`, "version", "integer"},
		{"version a string", `{"state": 2, "version": "1"}`, "version", "integer"},
		{"version missing", `{"state": 2}`, "version", "required"},
		{"both states", `{"state": 2, "state_base64": "AA==", "version": 1}`, "state", "exactly one"},
		{"not an object", `[{"state": 2, "version": 1}]`, "", "got an array"},
	} {
		a := put(tc.body)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", tc.name, a.body)
		msg, field := a.errorBody(t)
		require.Equal(t, tc.field, field, tc.name)
		require.Contains(t, msg, tc.msg, tc.name)
	}
	a = e.do("GET", "/api/v1/queues/q/state/s1", "")
	require.JSONEq(t, `{"state": {"n": 1}, "version": 1}`, a.body, "nothing was written")

	a = put(`{"version": 1, "state": {"n":  2}}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/q/state/s1", "")
	require.JSONEq(t, `{"state": {"n": 2}, "version": 2}`, a.body)
}

// GET /api/v1/queues/{q}/jobs/{id} of an id whose only trace is a deleted
// state answers 200 with the tombstone and its version, as GET .../state
// does (the version is what the next compare-and-set names); an id with
// nothing at all stays 404.
func TestJobLookupDeletedState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, stateful(map[string]int{"q": 0}))
	a := e.do("PUT", "/api/v1/queues/q/state/t%2F1", `{"state": {"n": 1}, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("PUT", "/api/v1/queues/q/state/t%2F1", `{"state": null, "version": 1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)

	look, a := e.get("t/1")
	require.Equal(t, "t/1", look.ID)
	require.Nil(t, look.Queued)
	require.Nil(t, look.Processing)
	require.False(t, look.InFlight)
	require.Nil(t, look.Timer)
	require.Equal(t, &apiv1.State{Version: 2, Deleted: true}, look.State)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(a.body), &raw))
	require.JSONEq(t, `{"state": null, "version": 2, "deleted": true}`, string(raw["state"]), "the state as GET .../state shows it")

	// The version it shows is the one a set names.
	a = e.do("PUT", "/api/v1/queues/q/state/t%2F1", `{"state": 3, "version": 2}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	look, _ = e.get("t/1")
	require.Equal(t, &apiv1.State{Data: []byte("3"), Version: 3}, look.State)

	a = e.do("GET", "/api/v1/queues/q/jobs/never", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
}

// GET /api/v1/queues/{q}/feed: the change feed of a stateful queue from a
// position, with a limit and a long-poll wait; bad parameters name
// themselves.
func TestFeedEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, stateful(map[string]int{"q": 0}))
	// An owner's first Advance records the queue's feed bound for writes
	// from outside (as a node serving the queue does).
	for sh := range testShards {
		l, _, err := e.store.AcquireShard(context.Background(), persistence.ShardRef{Queue: "q", Shard: sh}, "n1", time.Minute)
		require.NoError(t, err)
		_, err = e.store.Advance(context.Background(), l, persistence.AdvanceRequest{NextSeq: 1, Stateful: true, FeedMaxLen: 100, CheckOutbox: true})
		require.NoError(t, err)
	}
	a := e.do("PUT", "/api/v1/queues/q/state/a", `{"state": {"n": 1}, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("PUT", "/api/v1/queues/q/state/a", `{"state_base64": "AP8=", "version": 1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("PUT", "/api/v1/queues/q/state/a", `{"state": null, "version": 2}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)

	a = e.do("GET", "/api/v1/queues/q/feed", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	var feed apiv1.Feed
	require.NoError(t, json.Unmarshal([]byte(a.body), &feed))
	require.Len(t, feed.Entries, 3)
	require.Equal(t, []byte(`{"n":1}`), feed.Entries[0].Data)
	require.Equal(t, []byte{0, 0xff}, feed.Entries[1].Data)
	require.True(t, feed.Entries[2].Deleted)
	for i, en := range feed.Entries {
		require.Equal(t, "a", en.ID)
		require.Equal(t, int64(i+1), en.Version)
	}
	require.Equal(t, feed.Entries[2].Pos, feed.Next)
	require.Contains(t, a.body, `"state":{"n":1}`)

	a = e.do("GET", "/api/v1/queues/q/feed?from="+feed.Entries[0].Pos+"&limit=1", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	var one apiv1.Feed
	require.NoError(t, json.Unmarshal([]byte(a.body), &one))
	require.Len(t, one.Entries, 1)
	require.Equal(t, int64(2), one.Entries[0].Version)

	// A long poll from the end answers when a change comes.
	done := make(chan answer, 1)
	go func() { done <- e.do("GET", "/api/v1/queues/q/feed?from="+feed.Next+"&wait=10s", "") }()
	a = e.do("PUT", "/api/v1/queues/q/state/b", `{"state": 7, "version": 0}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = <-done
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"id":"b"`)

	// Bad parameters, numbers out of range among them (a position past
	// Redis's 64-bit stream ids), are answered 400 naming the parameter.
	for q, field := range map[string]string{
		"wait=1h": "wait", "wait=-1s": "wait", "wait=9999999999999h": "wait", "wait=1e400s": "wait",
		"limit=0": "limit", "limit=1001": "limit", "limit=99999999999999999999": "limit", "limit=-1": "limit",
		"from=x": "from", "from=1-": "from", "from=-1": "from", "from=1-2-3": "from", "from=%2B1": "from",
		"from=18446744073709551616": "from", "from=1-18446744073709551616": "from",
		"from=99999999999999999999-0": "from", "frm=0": "frm",
	} {
		a = e.do("GET", "/api/v1/queues/q/feed?"+q, "")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", q, a.body)
		_, f := a.errorBody(t)
		require.Equal(t, field, f, q)
	}
	// The largest position is in range: nothing after it.
	a = e.do("GET", "/api/v1/queues/q/feed?from=18446744073709551615-18446744073709551615", "")
	require.Equal(t, http.StatusOK, a.status, a.body)
	a = e.do("GET", "/api/v1/queues/plain/feed", "")
	require.Equal(t, http.StatusNotFound, a.status, a.body)
}
